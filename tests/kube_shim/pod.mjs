// A Pod as a Docker container: the create body from admit.mjs's plan, and
// the Pod's status from the container's inspect, in the shapes a kubelet
// reports (containerStatuses[].state waiting/running/terminated, the phase
// for restartPolicy Never, the four conditions).

export const LABEL = 'io.kube-shim'; // prefix of every engine label the shim sets

// RFC 3339 in seconds, UTC, "Z": how metav1.Time is written.
export const rfc3339 = (d) => new Date(d).toISOString().replace(/\.\d{3}Z$/, 'Z');
const engineTime = (s) => (s && !s.startsWith('0001-') ? rfc3339(s) : undefined);

// The Docker create body. user is "uid[:gid]" once the image's user is
// known (runAsGroup alone keeps the image's user); seccomp is the
// Localhost profile's JSON text.
export function createBody(p, { user, seccomp, run }) {
  const plan = p.plan;
  const labels = {
    [`${LABEL}.run`]: run,
    [`${LABEL}.namespace`]: p.metadata.namespace,
    [`${LABEL}.name`]: p.metadata.name,
    [`${LABEL}.uid`]: p.metadata.uid,
    [`${LABEL}.created`]: p.metadata.creationTimestamp,
  };
  // Labels and annotations kept whole, so the container says what the Pod said.
  for (const [k, v] of Object.entries(p.metadata.labels || {})) labels[`${LABEL}.label/${k}`] = v;
  for (const [k, v] of Object.entries(p.metadata.annotations || {})) labels[`${LABEL}.annotation/${k}`] = v;
  const secOpt = [];
  if (plan.noNewPrivs) secOpt.push('no-new-privileges:true');
  if (plan.seccomp && plan.seccomp.type === 'Unconfined') secOpt.push('seccomp=unconfined');
  if (seccomp) secOpt.push(`seccomp=${seccomp}`);
  if (plan.apparmor && plan.apparmor.type === 'Unconfined') secOpt.push('apparmor=unconfined');
  const hc = {
    NetworkMode: 'none', // the deny-all NetworkPolicies, and no CNI
    IpcMode: 'private',
    PidMode: '',
    ReadonlyRootfs: plan.readOnlyRoot,
    CapAdd: plan.capAdd.length ? plan.capAdd : null,
    CapDrop: plan.capDrop.length ? plan.capDrop : null,
    SecurityOpt: secOpt.length ? secOpt : null,
    Init: plan.init,
    Privileged: false,
    RestartPolicy: { Name: 'no' },
    AutoRemove: false,
    CpuShares: plan.cpuShares,
    Tmpfs: plan.tmpfs,
    Mounts: plan.diskMounts,
    GroupAdd: plan.groupAdd.length ? plan.groupAdd : null,
  };
  if (plan.memory !== undefined) hc.Memory = hc.MemorySwap = plan.memory;
  if (plan.nanoCpus !== undefined) hc.NanoCpus = plan.nanoCpus;
  if (plan.shmSize) hc.ShmSize = plan.shmSize;
  if (plan.runtime) hc.Runtime = plan.runtime;
  if (plan.sysctls) hc.Sysctls = plan.sysctls;
  const body = {
    Image: plan.image,
    Env: plan.env,
    Hostname: plan.hostname,
    Labels: labels,
    Tty: false,
    OpenStdin: plan.stdin,
    StdinOnce: plan.stdinOnce,
    AttachStdin: plan.stdin,
    AttachStdout: true,
    AttachStderr: true,
    HostConfig: hc,
  };
  // command replaces the image's ENTRYPOINT (and drops its CMD), args its
  // CMD; the engine merges the same way when a member is absent.
  if (plan.entrypoint) body.Entrypoint = plan.entrypoint;
  if (plan.cmd) body.Cmd = plan.cmd;
  if (plan.workingDir) body.WorkingDir = plan.workingDir;
  if (user) body.User = user;
  return body;
}

// The container's user: runAsUser/runAsGroup over the image's USER. Returns
// { user, uid } where uid is the number a runAsNonRoot check reads, or a
// string naming why it cannot be known.
export function effectiveUser(plan, imageUser) {
  const [iu, ig] = (imageUser || '').split(':');
  const u = plan.uid !== undefined ? String(plan.uid) : iu || '0';
  const g = plan.gid !== undefined ? String(plan.gid) : plan.uid !== undefined ? undefined : ig;
  return { user: g !== undefined && g !== '' ? `${u}:${g}` : u, uid: /^\d+$/.test(u) ? Number(u) : u };
}

// The container's state as a kubelet writes it, from an inspect (null when
// there is no container yet: p.waiting says why).
function containerState(p, ins) {
  if (!ins) return { waiting: p.waiting || { reason: 'ContainerCreating' } };
  const s = ins.State;
  if (p.startError) {
    return {
      terminated: {
        exitCode: s.ExitCode || 128,
        reason: 'StartError',
        message: p.startError,
        startedAt: '1970-01-01T00:00:00Z',
        finishedAt: engineTime(s.FinishedAt) || rfc3339(Date.now()),
        containerID: `docker://${ins.Id}`,
      },
    };
  }
  if (s.Status === 'running' || s.Status === 'paused' || s.Status === 'restarting')
    return { running: { startedAt: engineTime(s.StartedAt) } };
  if (s.Status === 'exited' || s.Status === 'dead' || (s.Status === 'removing' && s.FinishedAt)) {
    const t = { exitCode: s.ExitCode };
    t.reason = s.OOMKilled ? 'OOMKilled' : s.ExitCode === 0 ? 'Completed' : 'Error';
    t.startedAt = engineTime(s.StartedAt);
    t.finishedAt = engineTime(s.FinishedAt);
    t.containerID = `docker://${ins.Id}`;
    return { terminated: t };
  }
  return { waiting: { reason: 'ContainerCreating' } }; // created, not yet started
}

// Keeps a condition's lastTransitionTime while its status stays.
function condition(p, type, status, reason) {
  const prev = p.conditions[type];
  const c = { type, status, lastProbeTime: null, lastTransitionTime: prev && prev.status === status ? prev.lastTransitionTime : rfc3339(Date.now()) };
  if (reason) c.reason = reason;
  p.conditions[type] = c;
  return c;
}

// The Pod's status now. ins is the container's inspect or null.
export function podStatus(p, ins) {
  const st = { phase: 'Pending' };
  if (!p.spec.nodeName) {
    st.qosClass = p.plan.qosClass;
    return st;
  }
  const state = p.kubeletSeen ? containerState(p, ins) : null;
  const running = Boolean(state && state.running);
  const ended = state && state.terminated;
  if (p.deadlineExceeded) st.phase = 'Failed';
  else if (ended) st.phase = ended.exitCode === 0 && ended.reason !== 'StartError' ? 'Succeeded' : 'Failed';
  else if (running) st.phase = 'Running';
  const done = st.phase === 'Failed' || st.phase === 'Succeeded';
  const ready = running && !done;
  const conds = [];
  if (p.kubeletSeen) {
    conds.push(condition(p, 'PodReadyToStartContainers', ins ? 'True' : 'False'));
    conds.push(condition(p, 'Initialized', 'True'));
    conds.push(condition(p, 'Ready', ready ? 'True' : 'False', ready ? undefined : done ? 'PodCompleted' : 'ContainersNotReady'));
    conds.push(condition(p, 'ContainersReady', ready ? 'True' : 'False', ready ? undefined : done ? 'PodCompleted' : 'ContainersNotReady'));
  }
  conds.push(condition(p, 'PodScheduled', 'True'));
  st.conditions = conds;
  if (p.deadlineExceeded) {
    st.message = 'Pod was active on the node longer than the specified deadline';
    st.reason = 'DeadlineExceeded';
  }
  st.hostIP = '127.0.0.1';
  if (p.startTime) st.startTime = p.startTime;
  if (state) {
    const cs = {
      name: p.plan.container,
      state,
      lastState: {},
      ready,
      restartCount: 0,
      image: p.plan.image,
      imageID: p.imageID || '',
    };
    if (ins) cs.containerID = `docker://${ins.Id}`;
    cs.started = running;
    st.containerStatuses = [cs];
  }
  st.qosClass = p.plan.qosClass;
  return st;
}
