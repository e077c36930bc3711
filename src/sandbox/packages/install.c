#include "sandbox/packages/install.h"

#include <json-c/json.h>
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "base/json.h"
#include "base/util.h"

/* The installers' own indexes, when the language names none. */
static const char *const pip_hosts[] = {"pypi.org:443", "files.pythonhosted.org:443"};
static const char *const npm_hosts[] = {"registry.npmjs.org:443"};
static const char *const gem_hosts[] = {"rubygems.org:443", "index.rubygems.org:443"};

const char *install_image(const struct langtable_lang *lang)
{
    switch (lang->packages->installer) {
    case REQS_PIP:
        return INSTALL_IMAGE_PIP;
    case REQS_NPM:
        return INSTALL_IMAGE_NPM;
    case REQS_GEM:
    case REQS_COMPOSER:
        break;
    }
    return lang->image;
}

/* Where containers/node-npm's Debian npm keeps its library; npm_code
 * finds the same file from the npm on PATH. */
#define NPM_LIB "/usr/share/nodejs/npm/lib"

const char *install_preload(enum reqs_installer installer)
{
    return installer == REQS_NPM ? NPM_LIB "/npm.js," NPM_LIB "/commands/install.js" : NULL;
}

enum langtable_runner install_runner(enum reqs_installer installer)
{
    switch (installer) {
    case REQS_PIP:
        return LANGTABLE_RUNNER_PYTHON;
    case REQS_NPM:
        return LANGTABLE_RUNNER_NODE;
    case REQS_GEM:
    case REQS_COMPOSER:
        break;
    }
    return LANGTABLE_RUNNER_GENERIC;
}

/* strs[0..n) as a JSON array: a string literal in Python and JavaScript
 * alike ('/' left as it is: "\/" is no escape in Python). Caller frees. */
static char *literal(const char *const *strs, size_t n)
{
    json_object *a = json_object_new_array();
    for (size_t i = 0; i < n; i++)
        json_object_array_add(a, json_object_new_string(strs[i]));
    char *text = xstrdup(
        json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE));
    json_object_put(a);
    return text;
}

/* pip: --target a directory in the sandbox's own working directory (a
 * tmpfs: its size bounds what an install can write), copied into the
 * staging directory once it succeeded; sdists build against the image's
 * setuptools (no build isolation: it would fetch setuptools from the
 * index, which a mirror need not carry); without scripts, wheels only
 * (building from source runs the package's code). A plain-HTTP index is
 * the operator's choice: pip is told to trust it. The report names every
 * distribution in the set, PEP 503-normalized. */
static const char pip_code[] =
    "import json, re, shutil, subprocess, sys\n"
    "T = %s\n"
    "W = '/tmp/mcpsbx-set'\n"
    "idx = %s\n"
    "args = [sys.executable, '-m', 'pip', 'install', '--no-input', '--disable-pip-version-check',\n"
    "        '--no-cache-dir', '--no-warn-script-location', '--no-build-isolation',\n"
    "        '--retries', '1', '--timeout', '30', '--target', W]\n"
    "for i, u in enumerate(idx):\n"
    "    args += ['--index-url' if i == 0 else '--extra-index-url', u]\n"
    "    if u.startswith('http://'):\n"
    "        args += ['--trusted-host', u.split('/')[2]]\n"
    "if not %s:\n"
    "    args += ['--only-binary', ':all:']\n"
    "r = subprocess.run(args + ['--'] + %s)\n"
    "if r.returncode:\n"
    "    sys.exit(r.returncode)\n"
    "import importlib.metadata as md\n"
    "v = {}\n"
    "for d in md.distributions(path=[W]):\n"
    "    n = d.metadata['Name']\n"
    "    if n:\n"
    "        v[re.sub(r'[-_.]+', '-', n).lower()] = d.version\n"
    "import os\n"
    "for e in os.listdir(W):\n"
    "    s, d = os.path.join(W, e), os.path.join(T, e)\n"
    "    if os.path.islink(s):\n"
    "        os.symlink(os.readlink(s), d)\n"
    "    elif os.path.isdir(s):\n"
    "        shutil.copytree(s, d, symlinks=True)\n"
    "    else:\n"
    "        shutil.copy2(s, d)\n"
    "print(%s + json.dumps(v), flush=True)\n";

/* npm: --prefix a directory in the working directory (as pip's), copied
 * into the staging directory, with a cache of its own there (an engine
 * may copy an image's /tmp into the tmpfs: Podman does); only the first
 * index (npm takes one registry); without scripts, --ignore-scripts. npm
 * runs inside the runner's process, through its own library found beside
 * the npm on PATH: a second node would cost a start and every module
 * load again (about 400 ms of Debian's npm 9 on a 2-core machine). The
 * report names each requested package's installed version. */
static const char npm_code[] =
    "const fs = require('fs'), path = require('path');\n"
    "const T = %s, W = '/tmp/mcpsbx-set', idx = %s, reqs = %s, names = %s;\n"
    "const args = ['install', '--prefix', W, '--no-audit', '--no-fund', '--no-update-notifier',\n"
    "  '--fetch-retries=1', '--omit=dev', '--cache=/tmp/mcpsbx-npm-cache'];\n"
    "if (idx.length) args.push('--registry=' + idx[0]);\n"
    "if (!%s) args.push('--ignore-scripts');\n"
    "fs.mkdirSync(W, { recursive: true });\n"
    "const bin = (process.env.PATH || '').split(':').map((d) => path.join(d, 'npm'))\n"
    "  .find((f) => fs.existsSync(f));\n"
    "(async () => {\n"
    "  if (!bin) throw new Error('no npm on PATH');\n"
    "  const Npm = require(path.join(path.dirname(fs.realpathSync(bin)), '..', 'lib', 'npm.js'));\n"
    "  process.argv = [process.argv[0], 'npm'].concat(args, ['--'], reqs);\n"
    "  const npm = new Npm();\n"
    "  await npm.load();\n"
    "  await npm.exec('install', npm.argv.slice(1));\n"
    "  const v = {};\n"
    "  for (const n of names) {\n"
    "    try { v[n] = JSON.parse(fs.readFileSync(W + '/node_modules/' + n + "
    "'/package.json')).version; } catch (e) {}\n"
    "  }\n"
    "  fs.cpSync(W, T, { recursive: true, verbatimSymlinks: true });\n"
    "  process.stdout.write(%s + JSON.stringify(v) + '\\n');\n"
    "})().catch((e) => {\n"
    "  process.stderr.write('npm install failed: ' + (e && e.code ? e.code + ': ' : '') +\n"
    "    (e && e.message ? e.message : String(e)) + '\\n');\n"
    "  process.exitCode = 1;\n"
    "});\n";

/* gem: GEM_HOME a directory in the working directory (as pip's target),
 * copied into the staging directory without its cache of .gem files;
 * GEM_PATH unset, so the image's own gems count as installed (a set then
 * holds only what the image lacks: --install-dir would count nothing
 * else). No gemrc (HOME is the sandbox's), remote only (a name is never
 * read as a .gem file in the working directory), from the index alone
 * (--clear-sources, then each --source). gem resolves each word on its
 * own: the pinned ones go first and --conservative keeps a later
 * dependency to what is installed, so a set holds one version of a name.
 * No "--" before the words: gem passes what follows it to extension
 * builds. gem has no way to skip a gem's extension build, so a table may
 * not turn scripts off for it (langtable_packages.c). The report names
 * every gem in the set, lowercase. */
static const char gem_code[] =
    "require 'json'\n"
    "require 'fileutils'\n"
    "T = %s\n"
    "W = '/tmp/mcpsbx-set'\n"
    "idx = %s\n"
    "idx = ['https://rubygems.org/'] if idx.empty?\n"
    "reqs = %s\n"
    "reqs = reqs.select { |r| r.include?(':') } + reqs.reject { |r| r.include?(':') }\n"
    "env = { 'GEM_HOME' => W, 'GEM_PATH' => nil, 'GEM_SPEC_CACHE' => '/tmp/mcpsbx-gem-specs' }\n"
    "args = ['install', '--norc', '--remote', '--conservative', '--no-document',\n"
    "        '--no-user-install', '--clear-sources']\n"
    "idx.each { |u| args += ['--source', u] }\n"
    "system(env, 'gem', *args, *reqs) or exit($?.exitstatus || 1)\n"
    "v = {}\n"
    "Dir.glob(File.join(W, 'specifications', '*.gemspec')).each do |f|\n"
    "  s = Gem::Specification.load(f)\n"
    "  v[s.name.downcase] = s.version.to_s if s\n"
    "end\n"
    "FileUtils.rm_rf(File.join(W, 'cache'))\n"
    "Dir.children(W).each { |e| FileUtils.cp_r(File.join(W, e), T) }\n"
    "$stdout.write(%s + JSON.generate(v) + \"\\n\")\n"
    "$stdout.flush\n";

/* A literal made for Python and JavaScript, fit for Ruby too: inside
 * Ruby's double quotes '#' starts an interpolation, so it is spelled
 * "\u0023". Frees lit; caller frees the result. */
static char *ruby_literal(char *lit)
{
    size_t n = 0;
    for (const char *p = lit; *p; p++)
        n += *p == '#';
    char *out = xmalloc(strlen(lit) + 5 * n + 1), *o = out;
    for (const char *p = lit; *p; p++) {
        if (*p == '#') {
            memcpy(o, "\\u0023", 6);
            o += 6;
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    free(lit);
    return out;
}

char *install_code(const struct langtable_packages *p, const struct reqs_list *reqs,
                   struct err *err)
{
    const char *target = BACKEND_INSTALL_DIR;
    const char *mark = INSTALL_REPORT_MARK;
    const char **words = reqs_argv(reqs);
    const char **names = xcalloc(reqs->n + 1, sizeof(*names));
    for (size_t i = 0; i < reqs->n; i++)
        names[i] = reqs->v[i].name;
    char *t = literal(&target, 1), *m = literal(&mark, 1);
    char *idx = literal((const char *const *)p->index.v, p->index.n);
    char *w = literal(words, reqs->n), *nm = literal(names, reqs->n);
    /* The one-element arrays stand for their string: "[x]"[0]. */
    char *t0 = xasprintf("%s[0]", t), *m0 = xasprintf("%s[0]", m);
    char *code = NULL;
    if (p->installer == REQS_PIP) {
        code = xasprintf(pip_code, t0, idx, p->scripts ? "True" : "False", w, m0);
    } else if (p->installer == REQS_NPM) {
        code = xasprintf(npm_code, t0, idx, w, nm, p->scripts ? "true" : "false", m0);
    } else if (p->installer == REQS_GEM) {
        t0 = ruby_literal(t0);
        m0 = ruby_literal(m0);
        idx = ruby_literal(idx);
        w = ruby_literal(w);
        code = xasprintf(gem_code, t0, idx, w, m0);
    } else
        err_set(err, ERR_INVALID, "%s installs are not supported yet",
                reqs_installer_name(p->installer));
    free(t);
    free(m);
    free(t0);
    free(m0);
    free(idx);
    free(w);
    free(nm);
    free(names);
    free(words);
    return code;
}

/* url's "host:port" (scheme's port by default), as a pattern's text. */
static int url_pattern(const char *url, struct egress_patterns *out, struct err *err)
{
    bool https = strncmp(url, "https://", 8) == 0;
    const char *h = url + (https ? 8 : strncmp(url, "http://", 7) == 0 ? 7 : 0);
    if (h == url)
        return err_set(err, ERR_INVALID, "index URL '%.80s' is not http(s)", url);
    size_t n = strcspn(h, "/?#");
    const char *at = memchr(h, '@', n);
    if (at)
        return err_set(err, ERR_INVALID, "index URL '%.80s' holds credentials", url);
    bool has_port =
        n > 0 && h[n - 1] != ']' && memchr(h, ':', n) && (h[0] != '[' || memchr(h, ']', n));
    char text[EGRESS_PATTERN_TEXT_MAX + 8];
    if (n == 0 || n > EGRESS_PATTERN_TEXT_MAX)
        return err_set(err, ERR_INVALID, "index URL '%.80s' has no host, or too long a one", url);
    memcpy(text, h, n);
    text[n] = '\0';
    if (!has_port)
        snprintf(text + n, sizeof(text) - n, "%s", https ? ":443" : ":80");
    if (egress_patterns_add(out, text, strlen(text), err) < 0)
        return err_wrap(err, "index URL '%.80s'", url);
    return 0;
}

int install_egress(const struct langtable_packages *p, struct egress_patterns *out, struct err *err)
{
    memset(out, 0, sizeof(*out));
    for (size_t i = 0; i < p->index.n; i++)
        if (url_pattern(p->index.v[i], out, err) < 0)
            return -1;
    if (p->index.n > 0)
        return 0;
    const char *const *hosts = p->installer == REQS_NPM   ? npm_hosts
                               : p->installer == REQS_GEM ? gem_hosts
                                                          : pip_hosts;
    size_t n = p->installer == REQS_NPM   ? ARRAY_SIZE(npm_hosts)
               : p->installer == REQS_GEM ? ARRAY_SIZE(gem_hosts)
                                          : ARRAY_SIZE(pip_hosts);
    for (size_t i = 0; i < n; i++)
        if (egress_patterns_add(out, hosts[i], strlen(hosts[i]), err) < 0)
            return -1;
    return 0;
}

/* The report line's JSON object, or NULL: the last line that starts with
 * the mark. */
static json_object *report_object(const char *out, size_t len)
{
    const size_t ml = strlen(INSTALL_REPORT_MARK);
    const char *found = NULL;
    for (const char *p = out; p && p < out + len;) {
        if ((size_t)(out + len - p) >= ml && memcmp(p, INSTALL_REPORT_MARK, ml) == 0)
            found = p + ml;
        const char *nl = memchr(p, '\n', (size_t)(out + len - p));
        p = nl ? nl + 1 : NULL;
    }
    if (!found)
        return NULL;
    const char *nl = memchr(found, '\n', (size_t)(out + len - found));
    size_t n = nl ? (size_t)(nl - found) : (size_t)(out + len - found);
    if (n > INSTALL_REPORT_MAX)
        return NULL;
    json_object *o = NULL;
    struct json_exact why;
    if (json_parse_exact(found, n, 4, 0, &o, &why) < 0 ||
        !json_object_is_type(o, json_type_object)) {
        json_object_put(o);
        return NULL;
    }
    return o;
}

struct packages_report *install_report(const struct reqs_list *reqs, const char *out, size_t len)
{
    json_object *o = report_object(out, len);
    struct packages_report *r = install_report_versions(reqs, o);
    json_object_put(o);
    return r;
}

struct packages_report *install_report_versions(const struct reqs_list *reqs, const json_object *o)
{
    struct packages_report *r = xcalloc(1, sizeof(*r));
    r->items = xcalloc(reqs->n ? reqs->n : 1, sizeof(*r->items));
    r->n = reqs->n;
    for (size_t i = 0; i < reqs->n; i++) {
        r->items[i].name = xstrdup(reqs->v[i].name);
        json_object *v = NULL;
        if (o && json_object_object_get_ex(o, reqs->v[i].name, &v) &&
            json_object_is_type(v, json_type_string)) {
            char shown[PACKAGES_VERSION_MAX + 1];
            const char *s = json_object_get_string(v);
            util_printable_ascii(shown, sizeof(shown), s, strlen(s), false);
            r->items[i].version = xstrdup(shown);
        }
    }
    return r;
}

char *install_quote(const char *text, size_t len)
{
    while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r'))
        len--;
    size_t start = len;
    int lines = 0;
    while (start > 0 && len - start < INSTALL_QUOTE_MAX) {
        if (text[start - 1] == '\n' && ++lines >= INSTALL_QUOTE_LINES)
            break;
        start--;
    }
    char *out = xmalloc(len - start + 1);
    size_t k = 0;
    for (size_t i = start; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        out[k++] = c == '\n' || (c >= 0x20 && c < 0x7f) ? (char)c : '?';
    }
    out[k] = '\0';
    return out;
}
