#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <string.h>

#include "base/buf.h"

static void test_cap(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 8);
    assert_int_equal(buf_add(&b, "abcd", 4), 0);
    assert_int_equal(buf_add(&b, "efghi", 5), -1); /* all or nothing */
    assert_int_equal(b.len, 4);
    assert_int_equal(buf_add_upto(&b, "efghi", 5), 4);
    assert_int_equal(b.len, 8);
    assert_memory_equal(b.data, "abcdefgh", 8);
    assert_int_equal(b.data[8], '\0');
    assert_int_equal(buf_add_upto(&b, "x", 1), 0);
    buf_consume(&b, 3);
    assert_string_equal(buf_cstr(&b), "defgh");
    size_t n = 0;
    char *p = buf_take(&b, &n);
    assert_int_equal(n, 5);
    assert_string_equal(p, "defgh");
    free(p);
    assert_string_equal(buf_cstr(&b), "");
    buf_free(&b);
}

static void test_binary(void **state)
{
    (void)state;
    struct buf b;
    buf_init(&b, 1 << 20);
    assert_int_equal(buf_add(&b, "a\0b", 3), 0);
    assert_int_equal(buf_addf(&b, "%d-%s", 42, "x"), 0);
    assert_int_equal(b.len, 7);
    assert_memory_equal(b.data, "a\0b42-x", 7);
    buf_reset(&b);
    assert_int_equal(b.len, 0);
    buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cap),
        cmocka_unit_test(test_binary),
    };
    return cmocka_run_group_tests_name("buf", tests, NULL, NULL);
}
