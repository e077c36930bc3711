/* A run's egress summary, which the run's result carries: one entry per
 * connection the gateway served (host, port, allowed or why not, bytes
 * each way), appended by connection threads while the run goes on and
 * copied out, as plain C data, once the run's connections have ended.
 *
 * Entries past EGRESS_SUMMARY_MAX are counted, not stored; the totals
 * count every connection. Hosts and reasons are stored escaped
 * (util_escape) and cut: a host came from the sandbox. */
#ifndef MCPSBX_EGRESS_SUMMARY_H
#define MCPSBX_EGRESS_SUMMARY_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "egress/pattern.h"

/* How many entries a summary stores. */
#define EGRESS_SUMMARY_MAX 64
/* Room for an entry's host (escaped) and reason. */
#define EGRESS_SUMMARY_HOST_CAP   EGRESS_HOST_CAP
#define EGRESS_SUMMARY_REASON_CAP 320

struct egress_entry {
    char host[EGRESS_SUMMARY_HOST_CAP]; /* "" when no request named one */
    unsigned port;                      /* 0 likewise */
    bool allowed;                       /* the policy let it through */
    /* What the gateway itself answered: 200 for a tunnel, 403, 429,
     * 502, ...; 0 when it relayed the upstream's answer, or none. */
    int status;
    /* Refused: why. Allowed: "" when the connection ended as its ends
     * chose, else why the gateway cut it. */
    char reason[EGRESS_SUMMARY_REASON_CAP];
    unsigned long long up;   /* bytes sent upstream */
    unsigned long long down; /* bytes relayed back */
    unsigned secrets;        /* --secret values the gateway inserted (a count, never a value) */
    bool intercepted;        /* a tunnel whose TLS the gateway terminated (egress/intercept.h) */
};

/* The copy handed to the result's builder. Large (about 40 KiB): allocate
 * it. */
struct egress_report {
    size_t n;
    struct egress_entry entries[EGRESS_SUMMARY_MAX];
    size_t more;             /* entries not stored, past EGRESS_SUMMARY_MAX */
    size_t allowed;          /* connections allowed, stored or not */
    size_t refused;          /* connections refused, stored or not */
    unsigned long long up;   /* over every connection */
    unsigned long long down; /* likewise */
};

struct egress_summary {
    pthread_mutex_t lock;
    struct egress_report r; /* under lock */
};

void egress_summary_init(struct egress_summary *s);
void egress_summary_destroy(struct egress_summary *s);

/* Appends one connection's entry: e's host and reason are raw text
 * (escaped and cut here). Thread-safe. */
void egress_summary_add(struct egress_summary *s, const struct egress_entry *e);

/* Copies the summary into *out. Thread-safe; complete once every
 * connection of the run has ended. */
void egress_summary_copy(struct egress_summary *s, struct egress_report *out);

#endif
