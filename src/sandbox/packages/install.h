/* What an install runs: the program that installs a requirement list into
 * a staging directory, in a sandbox of its own (the installer's image, the
 * language's runner, network only through the egress gateway to the index
 * hosts), and what it reports back.
 *
 * The program is code for the language's own runner (Python for pip,
 * JavaScript for npm), not a shell script: the requirement words and index
 * URLs go in as JSON string literals (valid in both languages), so no
 * text of a caller's is ever read by a shell. It runs the installer with
 * one argv word per requirement (reqs.h made sure none is an option),
 * then prints INSTALL_REPORT_MARK and a JSON object of the installed
 * distributions' names and versions on a line of its own. That line comes
 * from a sandbox that ran install scripts: it is read with caps and only
 * ever shown, never trusted. */
#ifndef MCPSBX_INSTALL_H
#define MCPSBX_INSTALL_H

#include <json-c/json.h>
#include <stddef.h>

#include "base/err.h"
#include "egress/pattern.h"
#include "sandbox/languages/langtable.h"
#include "sandbox/packages/report.h"
#include "sandbox/packages/reqs.h"

/* The installers' images (containers/python-pip, containers/node-npm):
 * the language's image and its installer. gem comes with Debian's ruby:
 * its installs run in the language's own image. */
#define INSTALL_IMAGE_PIP "mcp-sandboxd-python-pip:latest"
#define INSTALL_IMAGE_NPM "mcp-sandboxd-node-npm:latest"
/* What starts the report line on the program's stdout. */
#define INSTALL_REPORT_MARK "MCPSBX-PACKAGES "
/* The most of the report line read. */
#define INSTALL_REPORT_MAX (64 * 1024)
/* The installer's lines quoted in an error (its stderr's last). */
#define INSTALL_QUOTE_LINES 12
#define INSTALL_QUOTE_MAX   2048

/* The image lang's installs run in. */
const char *install_image(const struct langtable_lang *lang);

/* What a ready installer of installer loads while it waits (the warm
 * runner's modules argument), or NULL for nothing: for npm, the library
 * of the installer image's Debian npm, which install_code runs in the
 * runner's process (about 300 ms of loading on a 2-core machine). */
const char *install_preload(enum reqs_installer installer);

/* The runner an install of installer runs under: LANGTABLE_RUNNER_PYTHON
 * for pip, LANGTABLE_RUNNER_NODE for npm, the language's own
 * (LANGTABLE_RUNNER_GENERIC, running ruby) for gem. */
enum langtable_runner install_runner(enum reqs_installer installer);

/* The program installing reqs per p into BACKEND_INSTALL_DIR, for
 * install_runner's runner (for gem, Ruby source) (caller frees); NULL
 * with err for an installer that has none. */
char *install_code(const struct langtable_packages *p, const struct reqs_list *reqs,
                   struct err *err);

/* The hosts an install per p may reach: each index URL's host and port,
 * or without an index the installer's own (pip: pypi.org and
 * files.pythonhosted.org; npm: registry.npmjs.org; gem: rubygems.org and
 * index.rubygems.org), port 443. */
int install_egress(const struct langtable_packages *p, struct egress_patterns *out,
                   struct err *err);

/* The report for reqs from the program's stdout: each requested name with
 * the version its report line gives (NULL when it gives none, or no line
 * came). Caller frees (packages_report_free). */
struct packages_report *install_report(const struct reqs_list *reqs, const char *out, size_t len);

/* The same from an object of names and versions (NULL: none), as a
 * report line or a cached set's manifest gives them; untrusted alike. */
struct packages_report *install_report_versions(const struct reqs_list *reqs,
                                                const json_object *versions);

/* The last lines of an installer's output, printable, for an error:
 * at most INSTALL_QUOTE_LINES lines and INSTALL_QUOTE_MAX bytes (caller
 * frees; "" when there is none). */
char *install_quote(const char *text, size_t len);

#endif
