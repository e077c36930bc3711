#include "sandbox/run/run.h"

#include <stdlib.h>
#include <string.h>

#include "sandbox/run/exec.h"

void run_init(struct run *r)
{
    memset(r, 0, sizeof(*r));
}

void run_files_free(struct run *r)
{
    for (size_t i = 0; i < r->n_file_data; i++)
        free(r->file_data[i]);
    free(r->file_data);
    free(r->files);
    for (size_t i = 0; i < r->n_patterns; i++)
        free(r->patterns[i]);
    free(r->patterns);
    r->file_data = NULL;
    r->n_file_data = 0;
    r->files = NULL;
    r->n_files = 0;
    r->patterns = NULL;
    r->n_patterns = 0;
    r->outputs.patterns = NULL;
    r->outputs.n_patterns = 0;
}

void run_free(struct run *r)
{
    run_files_free(r);
    free(r->text);
    free(r->variables);
    free(r->egress);
    if (r->packages) {
        reqs_list_free(r->packages);
        free(r->packages);
    }
    exec_cancel_free(r->cancel);
    run_init(r);
}
