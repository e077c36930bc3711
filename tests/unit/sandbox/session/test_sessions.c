/* sessions.c, the code sessions' registry, and session_check.c, the
 * checks on what it is given: ids (distinct, 32 hex), whose a session is
 * (another owner, another principal and a made-up id all get the same
 * NULL), the caps (daemon-wide and per owner, STARTING counted, abandon
 * freeing), one call at a time, idle and age expiry on a fake clock (a BUSY
 * session only after its call), tombstones shown once, ending an owner's
 * sessions, close, list's order and fields, and many threads at once (each
 * sandbox torn down exactly once; `make tsan`). Every test but the last
 * ends with nothing left in its registry (teardown). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "sandbox/session/session_check.h"
#include "sandbox/session/sessions.h"

/* ---- a fake clock and a recorded cancel ------------------------------------- */

static double fake_mono;
static long long fake_wall;
/* The wall clock shown runs this far ahead of the monotonic one. */
#define WALL_BASE 1795770900000LL

static double fake_now_ms(void)
{
    return fake_mono;
}

static long long fake_wall_ms(void)
{
    return fake_wall;
}

static void advance_to(double mono)
{
    fake_mono = mono;
    fake_wall = WALL_BASE + (long long)mono;
}

static void *cancelled[8];
static int n_cancelled;

static void record_cancel(void *call)
{
    if (n_cancelled < (int)(sizeof(cancelled) / sizeof(cancelled[0])))
        cancelled[n_cancelled] = call;
    n_cancelled++;
}

/* Each test's registry, from the limits its entry in main gives, on the
 * fake clock at 0; freed after it, which checks nothing was left behind. */
static int setup(void **state)
{
    struct code_sessions_limits lim = *(const struct code_sessions_limits *)*state;
    lim.now_ms = fake_now_ms;
    lim.wall_ms = fake_wall_ms;
    lim.cancel_call = record_cancel;
    advance_to(0);
    n_cancelled = 0;
    *state = code_sessions_new(&lim, NULL);
    return *state ? 0 : -1;
}

static int teardown(void **state)
{
    struct code_sessions *r = *state;
    int left = (int)code_sessions_counts(r, NULL).active;
    code_sessions_free(r);
    return left == 0 ? 0 : -1;
}

static const struct code_session_owner alice = {"0123456789abcdef0123456789abcdef", "stdio"};
static const struct code_session_owner bob = {"fedcba9876543210fedcba9876543210", "stdio"};
/* alice's owner hex under another principal. */
static const struct code_session_owner alice_token = {"0123456789abcdef0123456789abcdef",
                                                      "token:00112233aabbccdd"};

static int handle_of_every_session;

/* A session of who's, opened: the caller's reference. */
static struct code_session *open_one(struct code_sessions *r, const struct code_session_owner *who,
                                     const char *name)
{
    struct err err = ERR_INIT;
    struct code_session *cs = code_sessions_reserve(r, who, "python", name, &err);
    assert_non_null(cs);
    assert_int_equal(code_sessions_open(r, cs, &handle_of_every_session, &err), 0);
    return cs;
}

/* get, asserting the session is there (not a tombstone); drops the
 * reference again. */
static void assert_reachable(struct code_sessions *r, const char *id,
                             const struct code_session_owner *who)
{
    bool lost = true;
    struct code_session *cs = code_sessions_get(r, id, who, &lost);
    assert_non_null(cs);
    assert_false(lost);
    code_sessions_put(r, cs);
}

static void assert_absent(struct code_sessions *r, const char *id,
                          const struct code_session_owner *who)
{
    bool lost = true;
    assert_null(code_sessions_get(r, id, who, &lost));
    assert_false(lost);
}

/* ---- ids and owners -------------------------------------------------------- */

/* Sessions test_ids opens. */
#define IDS 64

static void test_ids(void **state)
{
    struct code_sessions *r = *state;
    struct code_session *cs[IDS];
    for (int i = 0; i < IDS; i++) {
        cs[i] = open_one(r, &alice, NULL);
        const char *id = code_session_id(cs[i]);
        assert_int_equal(strlen(id), CODE_SESSION_ID_LEN);
        assert_int_equal(strspn(id, "0123456789abcdef"), CODE_SESSION_ID_LEN);
        for (int j = 0; j < i; j++)
            assert_string_not_equal(id, code_session_id(cs[j]));
    }
    for (int i = 0; i < IDS; i++) {
        struct code_session *again = code_sessions_get(r, code_session_id(cs[i]), &alice, NULL);
        assert_ptr_equal(again, cs[i]);
        assert_ptr_equal(code_session_handle(again), &handle_of_every_session);
        code_sessions_put(r, again);
        assert_int_equal(code_sessions_close(r, cs[i]), CODE_SESSION_CLOSED);
        code_sessions_put(r, cs[i]);
    }
}

/* Another owner, the same owner under another principal, an id never made
 * and a malformed one: all the same NULL, no "lost". */
static void test_owner_and_principal(void **state)
{
    struct code_sessions *r = *state;
    struct code_session *cs = open_one(r, &alice, "mine");
    char id[CODE_SESSION_ID_LEN + 1];
    memcpy(id, code_session_id(cs), sizeof(id));
    assert_reachable(r, id, &alice);
    assert_absent(r, id, &bob);
    assert_absent(r, id, &alice_token);
    assert_absent(r, "00000000000000000000000000000000", &alice);
    /* The same id a character off, shorter, longer, in capitals. */
    char other[CODE_SESSION_ID_LEN + 2];
    memcpy(other, id, sizeof(id));
    other[CODE_SESSION_ID_LEN - 1] = other[CODE_SESSION_ID_LEN - 1] == '0' ? '1' : '0';
    assert_absent(r, other, &alice);
    memcpy(other, id, sizeof(id));
    other[CODE_SESSION_ID_LEN - 1] = '\0';
    assert_absent(r, other, &alice);
    memcpy(other, id, sizeof(id));
    other[CODE_SESSION_ID_LEN] = 'a';
    other[CODE_SESSION_ID_LEN + 1] = '\0';
    assert_absent(r, other, &alice);
    memcpy(other, id, sizeof(id));
    for (int i = 0; i < CODE_SESSION_ID_LEN; i++)
        if (other[i] >= 'a')
            other[i] = (char)(other[i] - 'a' + 'A');
    if (strcmp(other, id) != 0)
        assert_absent(r, other, &alice);
    assert_absent(r, NULL, &alice);
    assert_absent(r, "", &alice);
    /* No owner at all matches nothing, even an empty one's. */
    struct code_session_owner nobody = {"", ""};
    assert_absent(r, id, &nobody);
    assert_absent(r, id, NULL);
    struct err err = ERR_INIT;
    assert_null(code_sessions_reserve(r, &nobody, "python", NULL, &err));
    assert_int_equal(err.code, ERR_INVALID);
    err_clear(&err);
    assert_string_equal(code_session_owner(cs)->principal, "stdio");
    assert_string_equal(code_session_name(cs), "mine");
    assert_string_equal(code_session_language(cs), "python");
    code_sessions_close(r, cs);
    code_sessions_put(r, cs);
}

/* A name: at most 64 bytes of UTF-8 without control characters; a
 * language: short printable ASCII; limits in range. */
static void test_checks(void **state)
{
    struct code_sessions *r = *state;
    struct err err = ERR_INIT;
    char name[CODE_SESSION_NAME_MAX + 2];
    memset(name, 'n', sizeof(name));
    name[CODE_SESSION_NAME_MAX + 1] = '\0';
    const char *bad_names[] = {name, "a\nb", "tab\there", "del\x7f", "c1\xc2\x85", "bad\xff"};
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        assert_null(code_sessions_reserve(r, &alice, "python", bad_names[i], &err));
        assert_int_equal(err.code, ERR_INVALID);
        assert_non_null(strstr(err.msg, "name"));
        err_clear(&err);
    }
    const char *bad_languages[] = {NULL, "", "py thon", "python\n",
                                   "a-language-name-longer-than-32-bytes"};
    for (size_t i = 0; i < sizeof(bad_languages) / sizeof(bad_languages[0]); i++) {
        assert_null(code_sessions_reserve(r, &alice, bad_languages[i], NULL, &err));
        assert_int_equal(err.code, ERR_INVALID);
        err_clear(&err);
    }
    name[CODE_SESSION_NAME_MAX] = '\0';
    struct code_session *cs = code_sessions_reserve(r, &alice, "python", name, &err);
    assert_non_null(cs);
    assert_int_equal(strlen(code_session_name(cs)), CODE_SESSION_NAME_MAX);
    code_sessions_abandon(r, cs);
    code_sessions_put(r, cs);
    cs = code_sessions_reserve(r, &alice, "javascript", "caf\xc3\xa9 \xe2\x82\xac", &err);
    assert_non_null(cs);
    assert_string_equal(code_session_name(cs), "caf\xc3\xa9 \xe2\x82\xac");
    code_sessions_abandon(r, cs);
    code_sessions_put(r, cs);
    cs = code_sessions_reserve(r, &alice, "python", NULL, &err);
    assert_string_equal(code_session_name(cs), "");
    code_sessions_abandon(r, cs);
    code_sessions_put(r, cs);
    /* The same checks, on their own, for callers checking arguments. */
    assert_int_equal(session_check_name("", &err), 0);
    assert_int_equal(session_check_name("a\xc2\xa0"
                                        "b",
                                        &err),
                     0); /* U+00A0 is no control */
    assert_int_equal(session_check_name("a\xc2\x9f"
                                        "b",
                                        &err),
                     -1);
    err_clear(&err);
    assert_int_equal(session_check_language("c++", &err), 0);
    assert_true(session_check_id("0123456789abcdef0123456789abcdef"));
    assert_false(session_check_id("0123456789abcdef0123456789abcdeg"));
    assert_false(session_check_id("0123456789ABCDEF0123456789abcdef"));

    struct code_sessions_limits lims[] = {
        {.max_sessions = 0, .max_per_owner = 1, .idle_ms = 1, .max_age_ms = 1},
        {.max_sessions = CODE_SESSIONS_MAX + 1, .max_per_owner = 1, .idle_ms = 1, .max_age_ms = 1},
        {.max_sessions = 1, .max_per_owner = 0, .idle_ms = 1, .max_age_ms = 1},
        {.max_sessions = 1, .max_per_owner = 1, .idle_ms = 0, .max_age_ms = 1},
        {.max_sessions = 1, .max_per_owner = 1, .idle_ms = 1, .max_age_ms = 0},
        {.max_sessions = 1,
         .max_per_owner = 1,
         .idle_ms = CODE_SESSIONS_MAX_MS + 1,
         .max_age_ms = 1},
    };
    for (size_t i = 0; i < sizeof(lims) / sizeof(lims[0]); i++) {
        assert_null(code_sessions_new(&lims[i], &err));
        assert_int_equal(err.code, ERR_INVALID);
        err_clear(&err);
    }
}

/* ---- caps ------------------------------------------------------------------ */

static void test_caps(void **state)
{
    struct code_sessions *r = *state;
    struct err err = ERR_INIT;
    /* Reserved and still STARTING: counted. */
    struct code_session *a1 = code_sessions_reserve(r, &alice, "python", NULL, &err);
    struct code_session *a2 = code_sessions_reserve(r, &alice, "python", NULL, &err);
    assert_non_null(a1);
    assert_non_null(a2);
    assert_null(code_sessions_reserve(r, &alice, "python", NULL, &err));
    assert_int_equal(err.code, ERR_TOO_BIG);
    assert_string_equal(err.msg,
                        "too many code sessions per owner (--max-code-sessions-per-owner 2)");
    err_clear(&err);
    /* alice under another principal is another owner. */
    struct code_session *t1 = code_sessions_reserve(r, &alice_token, "python", NULL, &err);
    assert_non_null(t1);
    assert_null(code_sessions_reserve(r, &bob, "python", NULL, &err));
    assert_int_equal(err.code, ERR_TOO_BIG);
    assert_string_equal(err.msg, "too many code sessions (--max-code-sessions 3)");
    err_clear(&err);
    struct code_sessions_counts c = code_sessions_counts(r, &alice);
    assert_int_equal(c.active, 3);
    assert_int_equal(c.yours, 2);
    assert_int_equal(code_sessions_counts(r, &bob).yours, 0);
    assert_int_equal(code_sessions_counts(r, NULL).yours, 0);
    /* Abandoning a start frees its place; opened ones still count. */
    code_sessions_abandon(r, a1);
    code_sessions_put(r, a1);
    assert_int_equal(code_sessions_open(r, a2, NULL, &err), 0);
    struct code_session *b1 = code_sessions_reserve(r, &bob, "python", NULL, &err);
    assert_non_null(b1);
    assert_null(code_sessions_reserve(r, &bob, "python", NULL, &err));
    err_clear(&err);
    /* A lost session's tombstone takes no place. */
    code_sessions_lose(r, a2, "gone");
    code_sessions_put(r, a2);
    assert_int_equal(code_sessions_counts(r, &alice).active, 2);
    struct code_session *b2 = code_sessions_reserve(r, &bob, "python", NULL, &err);
    assert_non_null(b2);
    code_sessions_abandon(r, b1);
    code_sessions_put(r, b1);
    code_sessions_abandon(r, b2);
    code_sessions_put(r, b2);
    code_sessions_abandon(r, t1);
    code_sessions_put(r, t1);
    assert_int_equal(code_sessions_counts(r, NULL).active, 0);
}

/* ---- calls ------------------------------------------------------------------ */

static void test_one_call_at_a_time(void **state)
{
    struct code_sessions *r = *state;
    struct code_session *cs = open_one(r, &alice, NULL);
    struct err err = ERR_INIT;
    bool lost = true;
    int call1 = 1, call2 = 2;
    assert_int_equal(code_sessions_begin_call(r, cs, &call1, &lost, &err), 0);
    assert_false(lost);
    struct code_session_info info;
    code_sessions_info(r, cs, &info);
    assert_true(info.busy);
    /* A BUSY session is still its owner's to reach, not to call. */
    assert_reachable(r, code_session_id(cs), &alice);
    assert_int_equal(code_sessions_begin_call(r, cs, &call2, &lost, &err), -1);
    assert_int_equal(err.code, ERR_INVALID);
    assert_non_null(strstr(err.msg, "busy"));
    assert_false(lost);
    err_clear(&err);
    advance_to(400);
    assert_false(code_sessions_end_call(r, cs));
    code_sessions_info(r, cs, &info);
    assert_false(info.busy);
    assert_int_equal(info.last_used_at, WALL_BASE + 400);
    assert_int_equal(code_sessions_begin_call(r, cs, &call2, NULL, &err), 0);
    assert_false(code_sessions_end_call(r, cs));
    /* end_call with no call under way changes nothing. */
    assert_false(code_sessions_end_call(r, cs));
    assert_int_equal(n_cancelled, 0);
    code_sessions_close(r, cs);
    assert_int_equal(code_sessions_begin_call(r, cs, &call1, &lost, &err), -1);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    assert_false(lost);
    err_clear(&err);
    code_sessions_put(r, cs);
}

/* ---- expiry ------------------------------------------------------------------ */

static void test_idle_expiry(void **state)
{
    struct code_sessions *r = *state;
    struct code_session *cs = open_one(r, &alice, NULL);
    char id[CODE_SESSION_ID_LEN + 1];
    memcpy(id, code_session_id(cs), sizeof(id));
    code_sessions_put(r, cs);
    struct code_session_set set;
    double next = 0;
    /* A call ending at 600 restarts the idle timer: due at 1600. */
    advance_to(500);
    cs = code_sessions_get(r, id, &alice, NULL);
    assert_int_equal(code_sessions_begin_call(r, cs, NULL, NULL, NULL), 0);
    advance_to(600);
    assert_false(code_sessions_end_call(r, cs));
    code_sessions_put(r, cs);
    assert_int_equal(code_sessions_expire(r, 1599, &set, &next), 0);
    assert_true(next == 1600);
    code_sessions_set_put(r, &set);
    advance_to(1599);
    assert_reachable(r, id, &alice);
    /* Past it, gone for its owner at once, before any expire ran. */
    advance_to(1600);
    assert_absent(r, id, &alice);
    assert_int_equal(code_sessions_list(r, &alice, &(struct code_session_info *){NULL}), 0);
    assert_int_equal(code_sessions_counts(r, &alice).yours, 1); /* until the expire */
    assert_int_equal(code_sessions_expire(r, 1600, &set, &next), 1);
    assert_string_equal(code_session_id(set.v[0]), id);
    assert_ptr_equal(code_session_handle(set.v[0]), &handle_of_every_session);
    assert_true(next == -1);
    code_sessions_set_put(r, &set);
    assert_int_equal(code_sessions_counts(r, &alice).active, 0);
    assert_int_equal(code_sessions_expire(r, 99999, &set, NULL), 0);
    code_sessions_set_put(r, &set);
}

/* Used all along, a session still ends at its max age; a BUSY one not in
 * the middle of its call, but at the first expire after it. */
static void test_max_age_after_call(void **state)
{
    struct code_sessions *r = *state;
    struct code_session *cs = open_one(r, &alice, NULL);
    struct code_session_set set;
    double next = 0;
    for (double t = 900; t < 2700; t += 900) {
        advance_to(t);
        assert_int_equal(code_sessions_begin_call(r, cs, NULL, NULL, NULL), 0);
        assert_false(code_sessions_end_call(r, cs));
        assert_int_equal(code_sessions_expire(r, t, &set, &next), 0);
        code_sessions_set_put(r, &set);
    }
    /* Last used at 1800: due at 2800 (idle) */
    assert_true(next == 2800);
    advance_to(2700);
    assert_int_equal(code_sessions_begin_call(r, cs, NULL, NULL, NULL), 0);
    advance_to(3500);
    assert_int_equal(code_sessions_expire(r, 3500, &set, &next), 0);
    code_sessions_set_put(r, &set);
    assert_reachable(r, code_session_id(cs), &alice);
    assert_false(code_sessions_end_call(r, cs));
    /* After the call: past its age, so unreachable and expired. */
    assert_absent(r, code_session_id(cs), &alice);
    assert_int_equal(code_sessions_expire(r, 3500, &set, &next), 1);
    assert_ptr_equal(set.v[0], cs);
    code_sessions_set_put(r, &set);
    code_sessions_put(r, cs);
    assert_int_equal(code_sessions_counts(r, NULL).active, 0);
}

/* ---- tombstones -------------------------------------------------------------- */

static void test_tombstones(void **state)
{
    struct code_sessions *r = *state;
    struct code_session *cs = open_one(r, &alice, NULL);
    char id[CODE_SESSION_ID_LEN + 1];
    memcpy(id, code_session_id(cs), sizeof(id));
    code_sessions_lose(r, cs, "the sandbox's process exited (code 137)");
    code_sessions_put(r, cs);
    assert_int_equal(code_sessions_counts(r, &alice).yours, 0);
    assert_int_equal(code_sessions_list(r, &alice, &(struct code_session_info *){NULL}), 0);
    /* Others never see it. */
    assert_absent(r, id, &bob);
    assert_absent(r, id, &alice_token);
    /* Its owner does, once. */
    bool lost = false;
    cs = code_sessions_get(r, id, &alice, &lost);
    assert_non_null(cs);
    assert_true(lost);
    assert_string_equal(code_session_lost_reason(cs), "the sandbox's process exited (code 137)");
    code_sessions_put(r, cs);
    assert_absent(r, id, &alice);

    /* Lost between get and begin_call: that call learns it, and no later. */
    cs = open_one(r, &alice, NULL);
    struct code_session *held = code_sessions_get(r, code_session_id(cs), &alice, NULL);
    code_sessions_lose(r, cs, "killed");
    struct err err = ERR_INIT;
    assert_int_equal(code_sessions_begin_call(r, held, NULL, &lost, &err), -1);
    assert_true(lost);
    assert_int_equal(err.code, ERR_NOT_FOUND);
    assert_non_null(strstr(err.msg, "killed"));
    err_clear(&err);
    assert_absent(r, code_session_id(cs), &alice);
    code_sessions_put(r, held);
    code_sessions_put(r, cs);

    /* Lost in a call: that call says so, no tombstone. */
    cs = open_one(r, &alice, NULL);
    assert_int_equal(code_sessions_begin_call(r, cs, NULL, NULL, NULL), 0);
    code_sessions_lose(r, cs, "did not stop");
    assert_absent(r, code_session_id(cs), &alice);
    assert_int_equal(code_sessions_counts(r, NULL).active, 0);
    code_sessions_put(r, cs);

    /* A tombstone expires with the idle timer. */
    advance_to(100);
    cs = open_one(r, &alice, NULL);
    memcpy(id, code_session_id(cs), sizeof(id));
    advance_to(200);
    code_sessions_lose(r, cs, "oom");
    code_sessions_put(r, cs);
    struct code_session_set set;
    double next = 0;
    assert_int_equal(code_sessions_expire(r, 1199, &set, &next), 0);
    assert_true(next == 1200);
    assert_int_equal(code_sessions_expire(r, 1200, &set, &next), 0);
    assert_true(next == -1);
    code_sessions_set_put(r, &set);
    assert_absent(r, id, &alice);
}

/* At most 16 tombstones per owner and 256 in all: the oldest go. */
static void test_tombstone_caps(void **state)
{
    enum { OWNERS = 20, EACH = CODE_SESSION_TOMBSTONES_PER_OWNER + 1 };
    struct code_sessions *r = *state;
    static char ids[OWNERS][EACH][CODE_SESSION_ID_LEN + 1];
    struct code_session_owner who[OWNERS];
    for (int o = 0; o < OWNERS; o++) {
        snprintf(who[o].owner, sizeof(who[o].owner), "owner%02d", o);
        snprintf(who[o].principal, sizeof(who[o].principal), "stdio");
        for (int i = 0; i < EACH; i++) {
            advance_to(o * EACH + i);
            struct code_session *cs = open_one(r, &who[o], NULL);
            memcpy(ids[o][i], code_session_id(cs), sizeof(ids[o][i]));
            code_sessions_lose(r, cs, "lost");
            code_sessions_put(r, cs);
        }
    }
    /* Per owner, the first went when the 17th came; then, past 256 in all,
     * the oldest owners' lost their oldest. */
    int kept = 0;
    for (int o = 0; o < OWNERS; o++) {
        assert_absent(r, ids[o][0], &who[o]);
        for (int i = 1; i < EACH; i++) {
            bool lost = false;
            struct code_session *cs = code_sessions_get(r, ids[o][i], &who[o], &lost);
            assert_true(lost == (cs != NULL));
            kept += cs != NULL;
            code_sessions_put(r, cs);
        }
    }
    assert_int_equal(kept, CODE_SESSION_TOMBSTONES_MAX);
}

/* ---- ending ------------------------------------------------------------------ */

static void test_end_owner(void **state)
{
    struct code_sessions *r = *state;
    struct err err = ERR_INIT;
    int token = 7;
    struct code_session *idle = open_one(r, &alice, "idle");
    struct code_session *busy = open_one(r, &alice, "busy");
    assert_int_equal(code_sessions_begin_call(r, busy, &token, NULL, &err), 0);
    struct code_session *starting = code_sessions_reserve(r, &alice, "python", NULL, &err);
    struct code_session *dead = open_one(r, &alice, NULL);
    char dead_id[CODE_SESSION_ID_LEN + 1];
    memcpy(dead_id, code_session_id(dead), sizeof(dead_id));
    code_sessions_lose(r, dead, "x");
    code_sessions_put(r, dead);
    struct code_session *bobs = open_one(r, &bob, NULL);
    struct code_session *other_principal = open_one(r, &alice_token, NULL);

    struct code_session_set set;
    assert_int_equal(code_sessions_end_owner(r, &alice, &set), 1);
    assert_ptr_equal(set.v[0], idle);
    code_sessions_set_put(r, &set);
    /* The call was asked to stop; it tears the sandbox down at its end. */
    assert_int_equal(n_cancelled, 1);
    assert_ptr_equal(cancelled[0], &token);
    assert_absent(r, code_session_id(idle), &alice);
    assert_absent(r, code_session_id(busy), &alice);
    assert_absent(r, dead_id, &alice);
    assert_int_equal(code_sessions_counts(r, &alice).yours, 2); /* busy, starting */
    assert_true(code_sessions_end_call(r, busy));
    code_sessions_put(r, busy);
    assert_int_equal(code_sessions_open(r, starting, NULL, &err), -1);
    assert_int_equal(err.code, ERR_CANCELLED);
    err_clear(&err);
    code_sessions_put(r, starting);
    code_sessions_put(r, idle);
    assert_int_equal(code_sessions_counts(r, &alice).yours, 0);
    /* Nobody else's was touched. */
    assert_reachable(r, code_session_id(bobs), &bob);
    assert_reachable(r, code_session_id(other_principal), &alice_token);
    /* At shutdown: everyone's. */
    assert_int_equal(code_sessions_end_owner(r, NULL, &set), 2);
    code_sessions_set_put(r, &set);
    assert_int_equal(code_sessions_counts(r, NULL).active, 0);
    code_sessions_put(r, bobs);
    code_sessions_put(r, other_principal);
}

static void test_close(void **state)
{
    struct code_sessions *r = *state;
    struct code_session *cs = open_one(r, &alice, NULL);
    assert_int_equal(code_sessions_close(r, cs), CODE_SESSION_CLOSED);
    assert_absent(r, code_session_id(cs), &alice);
    assert_int_equal(code_sessions_close(r, cs), CODE_SESSION_GONE);
    assert_int_equal(code_sessions_counts(r, NULL).active, 0);
    code_sessions_put(r, cs);

    int token = 3;
    cs = open_one(r, &alice, NULL);
    assert_int_equal(code_sessions_begin_call(r, cs, &token, NULL, NULL), 0);
    assert_int_equal(code_sessions_close(r, cs), CODE_SESSION_CLOSING);
    assert_int_equal(n_cancelled, 1);
    assert_ptr_equal(cancelled[0], &token);
    assert_int_equal(code_sessions_close(r, cs), CODE_SESSION_GONE);
    assert_int_equal(n_cancelled, 1);
    assert_absent(r, code_session_id(cs), &alice);
    /* Its container is there until the call ends. */
    assert_int_equal(code_sessions_counts(r, NULL).active, 1);
    assert_true(code_sessions_end_call(r, cs));
    assert_int_equal(code_sessions_counts(r, NULL).active, 0);
    code_sessions_put(r, cs);
}

/* ---- list ------------------------------------------------------------------ */

/* A list entry, its times as the fake clock's. */
struct want {
    const struct code_session *cs;
    const char *language, *name;
    long long created, last_used;
    bool busy;
    long long expires;
};

static void assert_info(const struct code_session_info *got, struct want w)
{
    assert_string_equal(got->session_id, code_session_id(w.cs));
    assert_string_equal(got->language, w.language);
    assert_string_equal(got->name, w.name);
    assert_int_equal(got->created_at, WALL_BASE + w.created);
    assert_int_equal(got->last_used_at, WALL_BASE + w.last_used);
    assert_int_equal(got->busy, w.busy);
    assert_int_equal(got->idle_timeout_ms, 1000);
    assert_int_equal(got->expires_at, WALL_BASE + w.expires);
}

static void test_list(void **state)
{
    struct code_sessions *r = *state;
    struct err err = ERR_INIT;
    /* Reserved second but opened first: listed first. */
    advance_to(50);
    struct code_session *s2 = code_sessions_reserve(r, &alice, "python", "two", &err);
    struct code_session *s1 = code_sessions_reserve(r, &alice, "javascript", NULL, &err);
    advance_to(100);
    assert_int_equal(code_sessions_open(r, s1, NULL, &err), 0);
    advance_to(200);
    assert_int_equal(code_sessions_open(r, s2, NULL, &err), 0);
    struct code_session *starting = code_sessions_reserve(r, &alice, "python", NULL, &err);
    struct code_session *bobs = open_one(r, &bob, NULL);
    advance_to(800);
    assert_int_equal(code_sessions_begin_call(r, s1, NULL, NULL, &err), 0);
    advance_to(900);
    assert_false(code_sessions_end_call(r, s1));
    assert_int_equal(code_sessions_begin_call(r, s1, NULL, NULL, &err), 0);

    struct code_session_info *list = NULL;
    assert_int_equal(code_sessions_list(r, &alice, &list), 2);
    /* s1: its age comes first; s2: its idle time. */
    assert_info(&list[0], (struct want){s1, "javascript", "", 100, 900, true, 1600});
    assert_info(&list[1], (struct want){s2, "python", "two", 200, 200, false, 1200});
    struct code_session_info one;
    code_sessions_info(r, s2, &one);
    assert_memory_equal(&one, &list[1], sizeof(one));
    free(list);
    assert_int_equal(code_sessions_list(r, &bob, &list), 1);
    assert_string_equal(list[0].session_id, code_session_id(bobs));
    free(list);
    assert_int_equal(code_sessions_list(r, &alice_token, &list), 0);
    assert_null(list);

    assert_false(code_sessions_end_call(r, s1));
    struct code_session_set set;
    code_sessions_end_owner(r, NULL, &set);
    code_sessions_set_put(r, &set);
    code_sessions_abandon(r, starting);
    code_sessions_put(r, starting);
    code_sessions_put(r, s1);
    code_sessions_put(r, s2);
    code_sessions_put(r, bobs);
}

/* ---- many threads -------------------------------------------------------------- */

#define STRESS_THREADS 4
#define STRESS_ROUNDS  400
#define STRESS_MAX     5
#define STRESS_PER     3
/* Ids each owner's threads share, to call in each other's sessions. */
#define STRESS_SLOTS 8

static struct code_session_owner stress_who[2] = {
    {"11111111111111111111111111111111", "stdio"},
    {"22222222222222222222222222222222", "anonymous"},
};

struct stress_shared {
    struct code_sessions *r;
    pthread_mutex_t lock; /* the slots */
    char slots[2][STRESS_SLOTS][CODE_SESSION_ID_LEN + 1];
    /* A session per owner that all its threads call in, all along. */
    char shared[2][CODE_SESSION_ID_LEN + 1];
    atomic_int opened, torn_down, refused, over_cap, calls, wrong_handle, missing;
};

struct stress {
    struct stress_shared *sh;
    int index;
    unsigned seed;
};

/* The session's sandbox, torn down by whoever the registry says. */
static void tear_down(struct stress_shared *sh, struct code_session *cs)
{
    (void)cs;
    atomic_fetch_add(&sh->torn_down, 1);
}

/* Ends one of this thread's own sessions, by close or as lost. */
static void stress_end(struct stress_shared *sh, struct code_session *cs, bool lose)
{
    if (lose) {
        code_sessions_lose(sh->r, cs, "stress");
        tear_down(sh, cs);
    } else if (code_sessions_close(sh->r, cs) == CODE_SESSION_CLOSED) {
        tear_down(sh, cs);
    }
    code_sessions_put(sh->r, cs);
}

/* A call in a session of this owner's, if one of its ids is there. */
static void stress_call(struct stress_shared *sh, int who, unsigned *seed)
{
    char id[CODE_SESSION_ID_LEN + 1];
    pthread_mutex_lock(&sh->lock);
    memcpy(id, sh->slots[who][rand_r(seed) % STRESS_SLOTS], sizeof(id));
    pthread_mutex_unlock(&sh->lock);
    bool lost = false;
    struct code_session *cs = code_sessions_get(sh->r, id, &stress_who[who], &lost);
    if (!cs)
        return;
    if (!lost && code_sessions_begin_call(sh->r, cs, NULL, NULL, NULL) == 0) {
        atomic_fetch_add(&sh->calls, 1);
        if (code_session_handle(cs) != &handle_of_every_session)
            atomic_fetch_add(&sh->wrong_handle, 1);
        if (code_sessions_end_call(sh->r, cs))
            tear_down(sh, cs);
    }
    code_sessions_put(sh->r, cs);
}

/* A call in the owner's shared session, which is always there. */
static void stress_shared_call(struct stress_shared *sh, int who)
{
    struct code_session *cs = code_sessions_get(sh->r, sh->shared[who], &stress_who[who], NULL);
    if (!cs) {
        atomic_fetch_add(&sh->missing, 1);
        return;
    }
    if (code_sessions_begin_call(sh->r, cs, NULL, NULL, NULL) == 0) {
        atomic_fetch_add(&sh->calls, 1);
        if (code_sessions_end_call(sh->r, cs))
            atomic_fetch_add(&sh->missing, 1); /* it was never closed */
    }
    code_sessions_put(sh->r, cs);
}

static void *stress_main(void *arg)
{
    struct stress *st = arg;
    struct stress_shared *sh = st->sh;
    int who = st->index % 2;
    struct code_session *mine[2] = {NULL, NULL};
    for (int i = 0; i < STRESS_ROUNDS; i++) {
        struct code_session **slot = &mine[i % 2];
        if (*slot) {
            stress_end(sh, *slot, i % 7 == 0);
            *slot = NULL;
        }
        struct err err = ERR_INIT;
        struct code_session *cs =
            code_sessions_reserve(sh->r, &stress_who[who], "python", NULL, &err);
        if (!cs) {
            if (err.code != ERR_TOO_BIG)
                atomic_fetch_add(&sh->refused, 1);
            err_clear(&err);
        } else if (i % 5 == 0) {
            code_sessions_abandon(sh->r, cs);
            code_sessions_put(sh->r, cs);
        } else if (code_sessions_open(sh->r, cs, &handle_of_every_session, &err) == 0) {
            atomic_fetch_add(&sh->opened, 1);
            pthread_mutex_lock(&sh->lock);
            memcpy(sh->slots[who][rand_r(&st->seed) % STRESS_SLOTS], code_session_id(cs),
                   CODE_SESSION_ID_LEN + 1);
            pthread_mutex_unlock(&sh->lock);
            *slot = cs;
        }
        stress_call(sh, who, &st->seed);
        stress_shared_call(sh, who);
        struct code_sessions_counts c = code_sessions_counts(sh->r, &stress_who[who]);
        if (c.active > STRESS_MAX || c.yours > STRESS_PER)
            atomic_fetch_add(&sh->over_cap, 1);
        struct code_session_info *list = NULL;
        code_sessions_list(sh->r, &stress_who[who], &list);
        free(list);
    }
    for (int k = 0; k < 2; k++)
        if (mine[k])
            stress_end(sh, mine[k], false);
    return NULL;
}

static void test_threads(void **state)
{
    (void)state;
    struct code_sessions_limits lim = {
        .max_sessions = STRESS_MAX,
        .max_per_owner = STRESS_PER,
        .idle_ms = CODE_SESSIONS_MAX_MS,
        .max_age_ms = CODE_SESSIONS_MAX_MS,
    };
    struct stress_shared sh = {.r = code_sessions_new(&lim, NULL)};
    assert_non_null(sh.r);
    pthread_mutex_init(&sh.lock, NULL);
    struct code_session *shared[2];
    for (int w = 0; w < 2; w++) {
        shared[w] = open_one(sh.r, &stress_who[w], "shared");
        memcpy(sh.shared[w], code_session_id(shared[w]), sizeof(sh.shared[w]));
        atomic_fetch_add(&sh.opened, 1);
    }
    struct stress st[STRESS_THREADS];
    pthread_t th[STRESS_THREADS];
    for (int i = 0; i < STRESS_THREADS; i++) {
        st[i] = (struct stress){.sh = &sh, .index = i, .seed = (unsigned)i + 1};
        assert_int_equal(pthread_create(&th[i], NULL, stress_main, &st[i]), 0);
    }
    for (int i = 0; i < STRESS_THREADS; i++)
        pthread_join(th[i], NULL);
    for (int w = 0; w < 2; w++)
        stress_end(&sh, shared[w], false);
    assert_int_equal(atomic_load(&sh.missing), 0);
    assert_true(atomic_load(&sh.opened) > 0);
    assert_true(atomic_load(&sh.calls) > 0);
    /* Every sandbox torn down once, by exactly one thread. */
    assert_int_equal(atomic_load(&sh.torn_down), atomic_load(&sh.opened));
    assert_int_equal(atomic_load(&sh.refused), 0);
    assert_int_equal(atomic_load(&sh.over_cap), 0);
    assert_int_equal(atomic_load(&sh.wrong_handle), 0);
    assert_int_equal(code_sessions_counts(sh.r, NULL).active, 0);
    struct code_session_set set;
    assert_int_equal(code_sessions_end_owner(sh.r, NULL, &set), 0);
    code_sessions_set_put(sh.r, &set);
    pthread_mutex_destroy(&sh.lock);
    code_sessions_free(sh.r);
}

/* A test on a registry of these limits (setup, teardown). */
#define WITH(test, max, per_owner, idle, age)                                                      \
    cmocka_unit_test_prestate_setup_teardown(                                                      \
        test, setup, teardown,                                                                     \
        (&(struct code_sessions_limits){.max_sessions = (max),                                     \
                                        .max_per_owner = (per_owner),                              \
                                        .idle_ms = (idle),                                         \
                                        .max_age_ms = (age)}))

int main(void)
{
    const struct CMUnitTest tests[] = {
        WITH(test_ids, IDS, IDS, 1000, 10000),
        WITH(test_owner_and_principal, 4, 4, 1000, 10000),
        WITH(test_checks, 4, 4, 1000, 10000),
        WITH(test_caps, 3, 2, 1000, 10000),
        WITH(test_one_call_at_a_time, 2, 2, 1000, 10000),
        WITH(test_idle_expiry, 4, 4, 1000, 10000),
        WITH(test_max_age_after_call, 4, 4, 1000, 3000),
        WITH(test_tombstones, 4, 4, 1000, 10000),
        WITH(test_tombstone_caps, 1, 1, 1000000, 1000000),
        WITH(test_end_owner, 8, 8, 1000, 10000),
        WITH(test_close, 4, 4, 1000, 10000),
        WITH(test_list, 8, 8, 1000, 1500),
        cmocka_unit_test(test_threads),
    };
    return cmocka_run_group_tests_name("sessions", tests, NULL, NULL);
}
