// The shim's TLS material, made with the openssl command line at each
// start: a throwaway CA (DIR/ca.pem, which the kubeconfig names) and a
// server certificate for IP 127.0.0.1 signed by it. Keys are P-256 and
// stay in DIR (mode 0600); nothing is reused between runs.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

function openssl(args, cwd) {
  try {
    execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
  } catch (e) {
    const why = e.stderr ? e.stderr.toString().trim() : e.message;
    throw new Error(`openssl ${args[0]} failed: ${why}`);
  }
}

export function makeCerts(dir) {
  const p = (f) => path.join(dir, f);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  openssl(
    ['req', '-x509', ...ec, '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '7', '-subj', '/CN=kube-shim throwaway CA',
      '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'],
    dir,
  );
  openssl(['req', ...ec, '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1'], dir);
  // The SAN is what clients check (curl's VERIFYHOST, Node's checkServerIdentity).
  fs.writeFileSync(
    p('server.ext'),
    'subjectAltName=IP:127.0.0.1\nbasicConstraints=critical,CA:FALSE\n' +
      'keyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n',
  );
  openssl(
    ['x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial',
      '-out', 'server.pem', '-days', '7', '-extfile', 'server.ext'],
    dir,
  );
  for (const f of ['ca.key', 'server.key']) fs.chmodSync(p(f), 0o600);
  for (const f of ['server.csr', 'server.ext', 'ca.srl']) fs.rmSync(p(f), { force: true });
  return {
    ca: fs.readFileSync(p('ca.pem')),
    cert: fs.readFileSync(p('server.pem')),
    key: fs.readFileSync(p('server.key')),
    caPath: path.resolve(p('ca.pem')),
  };
}
