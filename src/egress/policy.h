/* One run's egress policy, built before the run as plain C data, and what
 * the run has used of it so far.
 *
 * The policy holds the run's own host patterns (its language's list,
 * already narrowed by the call), pointers to the daemon-wide pins and
 * allow CIDRs (read-only, shared by every run and thread), the run's
 * caps, and its --secret placeholders (egress/secrets.h). It is read-only once the run starts:
 * connection threads share it without a lock.
 *
 * The usage is the run's counters, shared by its connection threads:
 * connections open and made (under a lock, for the caps' decisions) and
 * bytes each way (atomics, taken before they are forwarded so that no
 * interleaving of threads passes a cap). */
#ifndef MCPSBX_EGRESS_POLICY_H
#define MCPSBX_EGRESS_POLICY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "base/err.h"
#include "egress/addr.h"
#include "egress/pattern.h"
#include "egress/resolve.h"
#include "egress/secrets.h"
#include "egress/tls.h"

/* Defaults of the per-run caps. */
#define EGRESS_CONNS_OPEN_DEFAULT  16                     /* connections open at once */
#define EGRESS_CONNS_TOTAL_DEFAULT 256                    /* connections over the run's life */
#define EGRESS_BYTES_UP_DEFAULT    (64ULL * 1024 * 1024)  /* sent upstream */
#define EGRESS_BYTES_DOWN_DEFAULT  (512ULL * 1024 * 1024) /* received from upstream */
#define EGRESS_CONN_MS_DEFAULT     (10LL * 60 * 1000)     /* one connection's life */
#define EGRESS_CONNECT_MS_DEFAULT  (10LL * 1000)          /* reaching the upstream */
#define EGRESS_HEAD_MS_DEFAULT     (10LL * 1000)          /* receiving the request's head */

/* The largest value egress_caps_check takes for a count, and for a time. */
#define EGRESS_CONNS_CAP_MAX 100000
#define EGRESS_MS_CAP_MAX    (24LL * 60 * 60 * 1000)
/* Room for a run's label in log lines ("run 1a2b3c", a session's id). */
#define EGRESS_LABEL_CAP 64

struct egress_caps {
    unsigned conns_open;
    unsigned conns_total;
    unsigned long long bytes_up;
    unsigned long long bytes_down;
    long long conn_ms;
    long long connect_ms;
    long long head_ms;
};

/* The defaults above. */
void egress_caps_default(struct egress_caps *caps);

/* Every cap must be at least 1 (a run without egress has no gateway at
 * all, not caps of 0) and a count or time at most the maxima above. */
int egress_caps_check(const struct egress_caps *caps, struct err *err);

struct egress_policy {
    char label[EGRESS_LABEL_CAP];
    struct egress_patterns patterns;
    const struct egress_pins *pins;   /* may be NULL: none */
    const struct egress_cidrs *allow; /* may be NULL: none */
    struct egress_caps caps;
    /* The run's placeholders for --secret (NULL: none), which must
     * outlive the run; egress_policy_init leaves it NULL. */
    const struct egress_run_secrets *secrets;
    /* For the TLS of the hosts bound to a secret, which the gateway
     * terminates (egress/intercept.h): the daemon's CA and the upstream
     * side's context, shared and daemon-wide; either NULL: tunnels are
     * never intercepted. egress_policy_init leaves them NULL. */
    struct egress_tls_ca *ca;
    SSL_CTX *upstream_tls;
};

/* Fills *p: label (may be NULL; shown escaped in log lines), a copy of
 * patterns, the shared pins and allow CIDRs (which must outlive the run),
 * and caps (NULL: the defaults). Fails when caps do not pass
 * egress_caps_check. */
int egress_policy_init(struct egress_policy *p, const char *label,
                       const struct egress_patterns *patterns, const struct egress_pins *pins,
                       const struct egress_cidrs *allow, const struct egress_caps *caps,
                       struct err *err);

enum egress_way {
    EGRESS_UP,   /* from the sandbox toward the upstream */
    EGRESS_DOWN, /* from the upstream toward the sandbox */
};

struct egress_usage {
    pthread_mutex_t lock;
    unsigned open;          /* under lock */
    unsigned total;         /* under lock */
    atomic_ullong bytes[2]; /* by enum egress_way */
};

void egress_usage_init(struct egress_usage *u);
void egress_usage_destroy(struct egress_usage *u);

enum egress_admit {
    EGRESS_ADMITTED,
    EGRESS_OVER_OPEN,  /* conns_open connections are open */
    EGRESS_OVER_TOTAL, /* conns_total connections were made */
};

/* Counts one more connection unless a cap forbids it. An admitted
 * connection calls egress_usage_leave once when it ends. */
enum egress_admit egress_usage_admit(struct egress_usage *u, const struct egress_caps *caps);
void egress_usage_leave(struct egress_usage *u);

/* Takes up to n bytes of the run's allowance for way; returns how many it
 * got (less than n once the cap is reached, 0 past it). */
unsigned long long egress_usage_take(struct egress_usage *u, const struct egress_caps *caps,
                                     enum egress_way way, unsigned long long n);

/* Gives back n bytes taken for way but never forwarded. */
void egress_usage_give_back(struct egress_usage *u, enum egress_way way, unsigned long long n);

/* Bytes taken so far for way. */
unsigned long long egress_usage_bytes(struct egress_usage *u, enum egress_way way);

/* Connections open now, and made so far. */
void egress_usage_conns(struct egress_usage *u, unsigned *open, unsigned *total);

#endif
