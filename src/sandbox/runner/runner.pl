# mcp-sandboxd generic in-container runner (protocol: src/sandbox/runner/runner.h),
# for languages with no runner of their own (bash, C, C++, Ruby, PHP,
# TypeScript, any language an operator configures). Started as
# `perl -e <this file>`: reads one framed request on stdin, writes the
# files, the program's source_file and its stdin, runs the compile step,
# the typecheck and the program as child processes, sends the output files
# as frames and writes the completion record on stderr, then stdout.
# Started as `perl -e <this file> warm` it is a pool runner: it says it is
# ready before reading the request and says go once the request is read.
# A request with "session": {"begin": true} makes it a session runner
# (runner.h, "process" mode): it answers with a record and then takes one
# request per cell from a private copy of its request descriptor, each a
# fresh process in the same working directory (a compile step is run again
# only for a changed source), until that descriptor ends; an interrupt frame
# for the running cell stops the cell's process group (SIGINT, then SIGKILL
# after $INT_GRACE).
# A bash session (the begin request's program runs the source file with
# bash alone) is "shell" mode instead: one interactive bash takes each
# cell's source file as a command line, so its variables, functions and
# cwd persist; an interrupt is a SIGINT to its process group, and `exit`
# ends the session after the cell's record.
# A request's "packages" (runner.h) are linked into node_modules/ of the
# working directory for its run (a cell's until it ends), a session cell's
# "add_packages" for the rest of the session: npm's layout, for a Node
# program the language runs (TypeScript's).
# `perl -e <this file> warm <argv...>` also starts argv, a checker kept
# ready for the typecheck (see warm_check), before it says ready.
# One file past the usual ~600 lines because it travels as one `perl -e`
# argument: the image needs nothing of the project's installed.
# Only modules of Debian's perl package (perl-base, perl-modules, libperl)
# and, where the image has it, JSON::XS (libjson-xs-perl; else JSON::PP
# reads the request, only slower). Everything the runner writes goes out with
# syswrite (no PerlIO buffer), so nothing of its own is pending when it
# forks and its lines are never interleaved with buffered halves.
use strict;
use warnings;
no warnings 'recursion';    # the request's walk and the files' walk recurse on purpose
use POSIX ();
use Fcntl qw(O_RDONLY O_WRONLY O_RDWR O_CREAT O_EXCL O_NOFOLLOW O_NONBLOCK SEEK_SET
  S_ISDIR S_ISREG S_ISLNK);
use Errno ();
use B ();
use Time::HiRes ();

my $PREFIX       = "\0\036mcpsbx-done:";
my $READY        = "\0\036mcpsbx-ready\n";
my $GO           = "\0\036mcpsbx-go\n";
my $CHECKED      = "\0\036mcpsbx-checked\n";    # a warm checker's last output
my $MAX_REQUEST  = 64 << 20;
my $RUNNER_EXIT  = 76;         # EX_PROTOCOL: the runner itself failed
my $FRAME_RAW    = 3000;       # bytes per D frame: a whole frame stays under PIPE_BUF
my $WALK_LIMIT   = 20000;      # directory entries looked at, at most
my $LEFT_REPORT  = 20;         # left-out files named, at most
my $STEP_DEFAULT = 30000;      # ms for a compile or typecheck without compile_timeout_ms
my $CHECK_KEEP   = 8 << 20;    # bytes of a warm checker's output kept for stderr
my $VARS_NAME    = '.mcpsbx-variables.json';
my $STDIN_NAME   = '.mcpsbx-stdin';
my $STDIO_NAME   = '.mcpsbx-stdio.js';
my $MAX_HEADER   = 32;         # bytes of a request header
my $MAX_CONTROL  = 64;         # in a session: "mcpsbx/1 interrupt <nonce>" too
my $INT_GRACE    = 0.5;        # s from a cell's SIGINT to its SIGKILL
my $CHILD_NAP    = 0.1;        # s: the longest a session waits to notice its cell ended
# Node leaves a pipe or socket on its stdout non-blocking and queues what it
# cannot write at once, without bound: a print loop fills the heap (exit 134)
# before the daemon's output cap can stop it, depending on how fast the
# daemon reads. Every node the program starts loads this first (through
# NODE_OPTIONS, which nothing else reads), so its writes wait for the daemon
# as the JavaScript runner's program's do.
my $STDIO_JS = 'for (const s of [process.stdout, process.stderr])'
    . " if (s && s._handle && typeof s._handle.setBlocking === 'function')"
    . " s._handle.setBlocking(true);\n";

my $nonce;         # once read: failures are reported in a record
my $files_json;    # the record's "files", once the files were sent
my $memory_error = 0;    # the program was killed for memory
my $warm         = 0;    # a pool runner (started with "warm")
my $session      = 0;    # a session runner: a record ends the cell, not the runner
my $interrupted  = 0;    # an interrupt frame stopped this cell
my $CELL_END     = \'the cell ended';    # finish's exception in a session
# Package sets (runner.h, "packages"): where they are. The host tests move
# the root with MCPSBX_PACKAGES_ROOT (they cannot make /opt/...); it is read
# here, before any request's env is applied, so no caller can.
my $PACKAGES_ROOT    = ($ENV{MCPSBX_PACKAGES_ROOT} || '/opt/mcpsbx-packages') =~ s{/+\z}{}r;
my $MAX_PACKAGE_SETS = 8;      # RUNNER_MAX_PACKAGE_SETS: per request, and per session
my $MAX_PACKAGE_PATH = 256;    # RUNNER_MAX_PACKAGE_PATH, with the real root
my @session_sets;              # added for the rest of the session ("add_packages")
my @cell_sets;                 # this request's "packages"
my @cell_adds;                 # this cell's "add_packages" not added yet
my @cell_links;                # the links this cell's sets made, taken off after it

# The sandbox cgroup's OOM kills so far (cgroup v2, else v1), or undef.
sub oom_kills {
    for my $f ('/sys/fs/cgroup/memory.events', '/sys/fs/cgroup/memory/memory.oom_control') {
        open(my $fh, '<', $f) or next;
        while (my $l = <$fh>) {
            return 0 + $1 if $l =~ /\Aoom_kill (\d+)/;
        }
    }
    return undef;
}
my $cwd;

# A closed stdout or stderr must be an error to report, not the runner's
# death. The children get the default back before exec (an ignored signal
# would stay ignored in the program).
$SIG{PIPE} = 'IGNORE';

# ---- low-level I/O ---------------------------------------------------------
# gVisor (runsc 2022) answers select() with EPERM whatever the descriptors;
# poll() works everywhere. IO::Poll is libperl's; where only perl-base is
# installed, select() it is.
my $HAVE_POLL = eval { require IO::Poll; 1 };

# select() for one direction, on poll(): bits (a vec() set of descriptors,
# changed in place to the ready ones, as select changes it), a timeout in
# seconds (undef: none), and whether to wait for writing. Returns what
# select returns.
sub wait_bits {
    my (undef, $timeout, $write) = @_;
    if (!$HAVE_POLL) {
        my ($r, $w) = $write ? (undef, $_[0]) : ($_[0], undef);
        my $n = select($r, $w, undef, $timeout);
        $_[0] = $write ? $w : $r;
        return $n;
    }
    my $want = $write ? IO::Poll::POLLOUT() : IO::Poll::POLLIN();
    my @args;
    for my $fd (0 .. 8 * length($_[0]) - 1) {
        push @args, $fd, $want if vec($_[0], $fd, 1);
    }
    my $ms = !defined $timeout ? -1 : $timeout <= 0 ? 0 : int($timeout * 1000) + 1;
    my $n = IO::Poll::_poll($ms, @args);
    return $n if $n <= 0;
    my $done = $want | IO::Poll::POLLHUP() | IO::Poll::POLLERR() | IO::Poll::POLLNVAL();
    my $ready = "\0" x length $_[0];
    for (my $i = 0; $i < @args; $i += 2) {
        vec($ready, $args[$i], 1) = 1 if $args[$i + 1] & $done;
    }
    $_[0] = $ready;
    return $n;
}

sub wait_fd {
    # Only reached if someone made a standard descriptor non-blocking (the
    # program shares them with the runner).
    my ($fd, $write) = @_;
    my $bits = '';
    vec($bits, $fd, 1) = 1;
    wait_bits($bits, undef, $write);
}

# Writes all of data; dies with the error.
sub write_all {
    my ($fh, $data) = @_;
    my ($off, $len) = (0, length $data);
    while ($off < $len) {
        my $n = syswrite($fh, $data, $len - $off, $off);
        if (!defined $n) {
            next if $!{EINTR};
            if ($!{EAGAIN} || $!{EWOULDBLOCK}) {
                wait_fd(fileno($fh), 1);
                next;
            }
            die "$!\n";
        }
        $off += $n;
    }
}

# Up to n bytes of fh, the request stream ('' at its end).
sub read_some {
    my ($fh, $n) = @_;
    while (1) {
        my $buf = '';
        my $got = sysread($fh, $buf, $n);
        return $buf if defined $got;
        next if $!{EINTR};
        if ($!{EAGAIN} || $!{EWOULDBLOCK}) {
            wait_fd(fileno($fh), 0);
            next;
        }
        runner_fail("cannot read the request: $!");
    }
}

# ---- text: everything here is bytes (UTF-8 when it is text) -----------------
my $UTF8_CHAR = qr/[\x00-\x7F]|[\xC2-\xDF][\x80-\xBF]|\xE0[\xA0-\xBF][\x80-\xBF]
  |[\xE1-\xEC\xEE\xEF][\x80-\xBF]{2}|\xED[\x80-\x9F][\x80-\xBF]
  |\xF0[\x90-\xBF][\x80-\xBF]{2}|[\xF1-\xF3][\x80-\xBF]{3}|\xF4[\x80-\x8F][\x80-\xBF]{2}/x;

# Strict UTF-8 (what the daemon checks): each byte outside a well-formed
# sequence becomes U+FFFD.
sub utf8_fix {
    my ($s) = @_;
    return $s if $s !~ /[\x80-\xFF]/;
    $s =~ s/($UTF8_CHAR)|[\x80-\xFF]/defined $1 ? $1 : "\xEF\xBF\xBD"/ge;
    return $s;
}

sub utf8_valid { return utf8_fix($_[0]) eq $_[0] }

# At most n characters of s (made valid UTF-8 first).
sub prefix_chars {
    my ($s, $n) = @_;
    $s = utf8_fix($s);
    return $s if length($s) <= $n;    # bytes >= characters
    utf8::decode($s);
    $s = substr($s, 0, $n);
    utf8::encode($s);
    return $s;
}

# A JSON string of UTF-8 bytes.
sub jstr {
    my $s = utf8_fix($_[0]);
    $s =~ s/(["\\])/\\$1/g;
    $s =~ s/([\x00-\x1f\x7f])/sprintf('\\u%04x', ord $1)/ge;
    return '"' . $s . '"';
}

# ---- the completion record -------------------------------------------------
# extra: JSON members to add ('"compile_error":{...}').
sub finish {
    my ($status, $runner_error, @extra) = @_;
    if (defined $nonce) {
        my $rec = '{"exit_code":' . int($status) . ',"memory_error":' . ($memory_error ? 'true' : 'false');
        $rec .= ',"runner_error":' . jstr(prefix_chars($runner_error, 1000)) if defined $runner_error;
        $rec .= ',"files":' . $files_json if defined $files_json;
        $rec .= ",$_" for @extra;
        my $line = $PREFIX . $nonce . ':' . $rec . "}\n";
        # stderr first, then stdout: the engine copies the two streams
        # independently, so the daemon needs an end mark on each.
        for my $fh (\*STDERR, \*STDOUT) {
            eval { write_all($fh, $line) };
        }
    }
    # A session runner goes on with the next cell.
    die $CELL_END if $session && defined $nonce;
    # The daemon reads the record; the runner's own status only says
    # whether it failed.
    POSIX::_exit(defined $runner_error ? $RUNNER_EXIT : 0);
}

sub runner_fail {
    my ($msg) = @_;
    if (!defined $nonce) {
        # No nonce, no record: stderr and the exit status are all we have.
        eval { write_all(\*STDERR, "mcpsbx runner: $msg\n") };
    }
    finish($RUNNER_EXIT, $msg);
}

# Runs $step; if it dies, the run fails with "$what: <why>".
sub or_fail {
    my ($what, $step) = @_;
    return if eval { $step->(); 1 };
    my $e = $@;
    die $e if ref $e;    # the cell ended (finish)
    chomp $e;
    runner_fail("$what: $e");
}

# A quoted name for a message.
sub quote { return jstr(prefix_chars($_[0], $_[1] // 200)) }

# ---- JSON in ----------------------------------------------------------------
# A library reads the request: JSON::XS where the image has it (Debian's
# libjson-xs-perl, hundreds of MB/s), else JSON::PP from Debian's perl
# (about 3 MB/s), with the same options. Loaded before the request is read:
# a warm runner has it before it says ready.
my $JSON = do {
    my $class = eval { require JSON::XS; 'JSON::XS' } || eval { require JSON::PP; 'JSON::PP' };
    if (!$class) {
        my $e = $@;
        chomp $e;
        runner_fail("no JSON module: $e");
    }
    # At most 512 levels deep (JSON::XS's default), no larger than a request.
    $class->new->allow_nonref(1)->max_depth(512)->max_size($MAX_REQUEST);
};

# What the runner works with: strings are UTF-8 bytes (a plain scalar that
# is not a number), numbers are the library's numeric scalars (IV/NV with
# no string value: the JSON string "5" stays a string), booleans are
# JSON::PP::Boolean objects (Types::Serialiser's, which JSON::XS returns,
# are the same class), null is undef, arrays and objects are references.
# Checked before any use as a string (that would give a number one).
my $SV_NUM = B::SVp_IOK() | B::SVp_NOK();
my $SV_STR = B::SVp_POK();

sub sv_flags { return B::svref_2object(\$_[0])->FLAGS }

sub is_num {
    return 0 if !defined $_[0] || ref $_[0];
    my $f = sv_flags($_[0]);
    return ($f & $SV_NUM) && !($f & $SV_STR);
}

sub is_str { return defined $_[0] && !ref $_[0] && !is_num($_[0]) }

sub is_bool {
    my $r = ref $_[0];
    return $r eq 'JSON::PP::Boolean' || $r eq 'Types::Serialiser::Boolean' || $r eq 'JSON::XS::Boolean';
}

# A whole number (1e3 and 2.0 are, whichever library read them).
sub is_whole { return is_num($_[0]) && $_[0] == int($_[0]) }

# A non-negative whole number from a number (0 when it is not one).
sub count_of {
    my ($v) = @_;
    return 0 unless is_whole($v) && $v >= 0;
    return 0 + $v;
}

# The library reads characters: the body is decoded from UTF-8 first when
# it is UTF-8 (json-c's text is, unless a secret is not), else each byte is
# one character. Every string is then made bytes again, in place: encoded
# back to UTF-8, or each character one byte. So raw bytes come out exactly
# as sent, and a \u escape is its character's UTF-8 (json-c writes them
# for control characters only); in a body that is not UTF-8 an escape over
# \u00ff cannot be a byte and is refused.
sub text_bytes {
    if ($_[1]) {
        utf8::encode($_[0]);
    } elsif (!utf8::downgrade($_[0], 1)) {
        die "a \\u escape over \\u00ff in a request that is not UTF-8\n";
    }
}

# The values in @_ (aliases: changed in place), and all they hold.
sub strings_to_bytes {
    my $encode = shift;
    for (@_) {
        if (ref eq 'HASH') {
            my $h = $_;
            if (grep { /[^\x00-\x7F]/ } keys %$h) {
                # New keys once all old ones are out: none can meet another.
                my @pairs = map { [$_, delete $h->{$_}] } keys %$h;
                for my $p (@pairs) {
                    text_bytes($p->[0], $encode);
                    $h->{ $p->[0] } = $p->[1];
                }
            }
            strings_to_bytes($encode, values %$h);
        } elsif (ref eq 'ARRAY') {
            strings_to_bytes($encode, @$_);
        } elsif (is_str($_) && /[^\x00-\x7F]/) {
            text_bytes($_, $encode);
        }
    }
}

# The request's value; takes the body (the caller's text itself: a request
# is not copied) and leaves it decoded. Dies with the library's message,
# without its quote of the text (which may hold a secret).
sub decode_request {
    my $encode = utf8::decode($_[0]);
    # Perl's UTF-8 is wider than UTF-8: no surrogates, nothing past U+10FFFF
    # (JSON::PP would refuse them where JSON::XS takes them).
    if ($encode && $_[0] =~ /[^\x{0}-\x{D7FF}\x{E000}-\x{10FFFF}]/) {
        utf8::encode($_[0]);
        $encode = 0;
    }
    my $v = eval { $JSON->decode($_[0]) };
    if (my $e = $@) {
        $e =~ s/ \(before .*//s;
        $e =~ s/ at \S+ line \d+\.?\n?\z//;
        chomp $e;
        die "$e\n";
    }
    strings_to_bytes($encode, $v);
    return $v;
}

# ---- the program: what to write, compile, check and run -------------------
my ($source_file, @cwd_id);
# The last compile that succeeded in this session (source, argvs): a cell
# with the same source skips the compile step.
my $compiled;

sub argv_ok {
    my ($a) = @_;
    return 0 unless ref $a eq 'ARRAY' && @$a && @$a <= 256;
    for (@$a) {
        return 0 unless is_str($_) && $_ ne '' && !/\0/;
    }
    return 1;
}

# ---- files ------------------------------------------------------------------
# mkdir -p of a relative directory; dies with the error.
sub make_dirs {
    my ($dir) = @_;
    my $path = '';
    for my $part (split m{/}, $dir) {
        $path .= ($path eq '' ? '' : '/') . $part;
        next if mkdir($path, 0755) || $!{EEXIST};
        die "$!\n";
    }
}

# O_EXCL|O_NOFOLLOW: nothing existing is replaced and no link is followed.
# Perl makes its descriptors close-on-exec: no child inherits them.
sub write_new_file {
    my ($path, $data, $mode) = @_;
    sysopen(my $fh, $path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, $mode) or die "$!\n";
    write_all($fh, $data);
    close($fh) or die "$!\n";
}

# A file of the run: a new one, or in a session, where an earlier cell may
# have left one of that name, written beside it and renamed over it (rename
# replaces a symlink itself, never its target).
sub write_file {
    my ($path, $data, $mode) = @_;
    return write_new_file($path, $data, $mode) unless $session;
    my $tmp = ($path =~ m{\A(.*/)} ? $1 : '') . ".mcpsbx-new-$$";
    unlink($tmp);
    write_new_file($tmp, $data, $mode);
    if (!rename($tmp, $path)) {
        my $e = $!;
        unlink($tmp);
        die "$e\n";
    }
}

# ---- children ----------------------------------------------------------------
# Starts argv in its own process group (so what it leaves behind can be
# killed as one) with fd 0 from stdin_fh and, with to_stderr, its stdout on
# the runner's stderr. Every other descriptor of the runner is
# close-on-exec: the child has 0, 1 and 2 only.
sub spawn {
    my ($argv, $in_fh, $to_stderr) = @_;
    my $pid = fork;
    runner_fail("cannot start a process: $!") unless defined $pid;
    if ($pid == 0) {
        # A session's interrupt must reach the program however the runner
        # was started: one started in the background of a non-interactive
        # shell inherits SIGINT and SIGQUIT ignored, and exec keeps that.
        @SIG{qw(PIPE INT QUIT)} = ('DEFAULT') x 3;
        POSIX::setpgid(0, 0);
        my $ok = defined POSIX::dup2(fileno($in_fh), 0);
        $ok &&= defined POSIX::dup2(2, 1) if $to_stderr;
        if ($ok) {
            no warnings 'exec';
            exec { $argv->[0] } @$argv;
        }
        my $msg = "cannot run $argv->[0]: $!\n";
        POSIX::write(2, $msg, length $msg);
        POSIX::_exit(127);
    }
    # From this side too: no moment in which the group kill could miss it.
    POSIX::setpgid($pid, $pid);
    return $pid;
}

# The shell's convention: the exit status, or 128 + the signal.
sub status_of {
    my ($st) = @_;
    return ($st & 127) ? 128 + ($st & 127) : ($st >> 8) & 255;
}

sub kill_group {
    my ($pid) = @_;
    kill('KILL', -$pid);
}

# Waits for pid at most ms milliseconds, then kills its group: (status,
# timed_out). Polls with short naps: no signal handler to race with.
sub wait_step {
    my ($pid, $ms) = @_;
    my $deadline = Time::HiRes::time() + $ms / 1000;
    my $nap      = 0.001;
    while (1) {
        my $r = waitpid($pid, POSIX::WNOHANG());
        if ($r == $pid) {
            my $st = $?;
            kill_group($pid);    # what the step left running
            return (status_of($st), 0);
        }
        runner_fail("cannot wait for a process: $!") if $r < 0 && !$!{EINTR};
        my $left = $deadline - Time::HiRes::time();
        if ($left <= 0) {
            kill_group($pid);
            kill('KILL', $pid);
            1 while waitpid($pid, 0) < 0 && $!{EINTR};
            return (128 + 9, 1);
        }
        Time::HiRes::sleep($nap < $left ? $nap : $left);
        $nap *= 2 if $nap < 0.016;
    }
}

sub step_error {
    my ($key, $status, $timed_out) = @_;
    return sprintf('"%s":{"exit_code":%d,"timed_out":%s}', $key, $status, $timed_out ? 'true' : 'false');
}

# ---- the warm checker ----------------------------------------------------------
my ($checker_pid, $checker_in, $checker_out);

# A warm runner's checker (the language table's typecheck_warm) does the
# typecheck's slow part, loading the checker and the declarations every
# program uses, while the sandbox waits. Its protocol: it reads one line,
# the source file's name, then prints the typecheck's diagnostics and
# $CHECKED, and exits 0 (no error) or 2 (errors), as tsc does. Any other
# end is its own failure (it could not start, a bad option, a crash): its
# output is dropped and the cold typecheck command checks instead. It is in its own process
# group, stdin and stdout are pipes to this runner, and it ends before the
# program starts.
sub start_checker {
    my ($argv) = @_;
    my ($in_r, $in_w, $out_r, $out_w);
    # Without one, the cold command checks: nothing to report.
    return unless pipe($in_r, $in_w) && pipe($out_r, $out_w);
    my $pid = fork;
    return unless defined $pid;
    if ($pid == 0) {
        $SIG{PIPE} = 'DEFAULT';
        POSIX::setpgid(0, 0);
        if (   defined POSIX::dup2(fileno($in_r), 0)
            && defined POSIX::dup2(fileno($out_w), 1)
            && defined POSIX::dup2(1, 2))
        {
            no warnings 'exec';
            exec { $argv->[0] } @$argv;
        }
        POSIX::_exit(127);
    }
    POSIX::setpgid($pid, $pid);
    close($in_r);
    close($out_w);
    ($checker_pid, $checker_in, $checker_out) = ($pid, $in_w, $out_r);
}

# Ends the checker (its group) and reaps it: its status_of.
sub end_checker {
    my ($pid) = @_;
    kill_group($pid);
    kill('KILL', $pid);
    1 while waitpid($pid, 0) < 0 && $!{EINTR};
    return status_of($?);
}

# The warm checker's verdict on the source file within ms: (status,
# timed_out) with its diagnostics on stderr, or () when it failed.
sub warm_check {
    my ($ms) = @_;
    my ($pid, $in, $out) = ($checker_pid, $checker_in, $checker_out);
    $checker_pid = undef;
    my $deadline = Time::HiRes::time() + $ms / 1000;
    my $asked    = eval { write_all($in, "$source_file\n"); 1 };
    close($in);
    if (!$asked) {
        end_checker($pid);
        close($out);
        return ();
    }
    my ($text, $dropped, $tail) = ('', 0, '');
    while (1) {
        my $left = $deadline - Time::HiRes::time();
        if ($left <= 0) {
            end_checker($pid);
            close($out);
            eval { write_all(\*STDERR, $text) };
            return (128 + 9, 1);
        }
        my $bits = '';
        vec($bits, fileno($out), 1) = 1;
        my $ready = wait_bits($bits, $left);
        next if $ready <= 0;    # EINTR, or the deadline: looked at above
        my $buf = '';
        my $got = sysread($out, $buf, 65536);
        if (!defined $got) {
            next if $!{EINTR} || $!{EAGAIN};
            last;
        }
        last if $got == 0;
        my $room = $CHECK_KEEP - length($text);
        $text .= $room >= $got ? $buf : substr($buf, 0, $room);
        $dropped += $got - $room if $got > $room;
        $tail = substr($tail . $buf, -length($CHECKED));
    }
    close($out);
    my $status = end_checker($pid);
    return () unless ($status == 0 || $status == 2) && $tail eq $CHECKED;
    # The end mark is no diagnostic: off the kept text, or off the count.
    my $mark = length($CHECKED) - ($dropped < length($CHECKED) ? $dropped : length($CHECKED));
    $dropped -= length($CHECKED) - $mark;
    substr($text, length($text) - $mark) = '';
    $text .= "mcpsbx: $dropped more bytes of the typecheck's output were left out\n" if $dropped;
    eval { write_all(\*STDERR, $text) };
    return ($status, 0);
}

# ---- outputs: files as frames before the record ----------------------------
# One write of at most 4096 bytes: a pipe (and a unix socket) takes it
# whole, so a process still writing to stdout cannot split it.
sub frame {
    my ($kind, $payload) = @_;
    write_all(\*STDOUT, $PREFIX . $nonce . ':' . $kind . $payload . "\n");
}

# fnmatch's glob of one name (* ? [...] [!...]) as a regex over characters,
# or undef when it cannot be one (compared as text then).
sub glob_re {
    my ($pat) = @_;
    utf8::decode($pat);
    my ($re, $i, $n) = ('', 0, length $pat);
    while ($i < $n) {
        my $c = substr($pat, $i++, 1);
        if ($c eq '*') {
            $re .= '.*';
        } elsif ($c eq '?') {
            $re .= '.';
        } elsif ($c eq '[') {
            my $j = $i;
            $j++ if $j < $n && substr($pat, $j, 1) eq '!';
            $j++ if $j < $n && substr($pat, $j, 1) eq ']';
            $j++ while $j < $n && substr($pat, $j, 1) ne ']';
            if ($j >= $n) {
                $re .= '\\[';
                next;
            }
            my $set = substr($pat, $i, $j - $i);
            $i = $j + 1;
            my $neg = $set =~ s/\A!//;
            # Every character literal but '-' (a range).
            $re .= '[' . ($neg ? '^' : '') . join('', map { $_ eq '-' ? '-' : quotemeta } split //, $set) . ']';
        } else {
            $re .= quotemeta $c;
        }
    }
    local $SIG{__WARN__} = sub { };    # a warning is not the program's output
    return eval { qr/\A(?:$re)\z/s };
}

sub glob_match {
    my ($re, $pat, $name) = @_;
    return $name eq $pat unless defined $re;
    utf8::decode($name);
    return $name =~ $re;
}

# The regular files under outputs/ and those the patterns match, as frames;
# sets the record's account. The walk never follows a symlink: it lists
# with lstat and descends only into real directories; every file is opened
# with O_NOFOLLOW and read only if it is the one the walk saw, inside the
# working directory (a directory on the way swapped for a link is caught).
sub send_outputs {
    my ($spec) = @_;
    # The program may have removed, renamed or replaced its directory.
    my @here = chdir($cwd) ? (stat '.')[0, 1] : ();
    if (!@here || $here[0] != $cwd_id[0] || $here[1] != $cwd_id[1]) {
        $files_json = '{"sent":0,"left_out":0,"cwd_gone":true}';
        return;
    }
    require Digest::SHA;
    require MIME::Base64;
    my $max_files  = count_of($spec->{max_files});
    my $max_file   = count_of($spec->{max_file_bytes});
    my $total_left = count_of($spec->{max_total_bytes});
    my ($sent, $left_out, $n_files, $seen, $stopped) = (0, 0, 0, 0, 0);
    my (@lefts, @found);

    my $leave_out = sub {
        my ($p, $reason, $size, $cap) = @_;
        $left_out++;
        push @lefts, [$cap ? 1 : 0, $p, $reason, $size] if @lefts < $WALK_LIMIT;
    };
    my $send = sub {
        my ($p, $data) = @_;
        frame('F', '{"path":' . jstr($p) . ',"size":' . length($data) . ',"kind":"file"}');
        for (my $i = 0; $i < length $data; $i += $FRAME_RAW) {
            frame('D', MIME::Base64::encode_base64(substr($data, $i, $FRAME_RAW), ''));
        }
        frame('E', Digest::SHA::sha256_hex($data));
        $sent++;
        $total_left -= length $data;
    };
    # The names in d, sorted; the runner's own (.mcpsbx*) are not there.
    my $entries = sub {
        my ($d) = @_;
        return () if $stopped;
        opendir(my $dh, $d eq '' ? '.' : $d) or return ();
        my @out;
        while (defined(my $name = readdir $dh)) {
            next if $name eq '.' || $name eq '..' || ($d eq '' && $name =~ /\A\.mcpsbx/);
            if (++$seen > $WALK_LIMIT) {
                $stopped = 1;
                last;
            }
            push @out, $name;
        }
        closedir $dh;
        return sort @out;
    };
    my $join = sub { return $_[0] eq '' ? $_[1] : "$_[0]/$_[1]" };
    my $add  = sub {
        my ($rel, $st) = @_;
        push @found, [$rel, $st] if @$st;
    };
    my $walk_all;
    $walk_all = sub {
        my ($d) = @_;
        for my $name ($entries->($d)) {
            my $rel = $join->($d, $name);
            my @st  = lstat $rel;
            if (@st && S_ISDIR($st[2])) {
                $walk_all->($rel);
            } else {
                $add->($rel, \@st);
            }
        }
    };
    my $walk_glob;
    $walk_glob = sub {
        my ($d, $parts) = @_;
        my ($head, @rest) = @$parts;
        if ($head eq '**') {
            # Zero or more directories, hidden ones only when named; a
            # pattern ending in ** takes every file below.
            $walk_glob->($d, @rest ? \@rest : ['*']);
            for my $name ($entries->($d)) {
                next if $name =~ /\A\./;
                my $rel = $join->($d, $name);
                my @st  = lstat $rel;
                $walk_glob->($rel, $parts) if @st && S_ISDIR($st[2]);
            }
            return;
        }
        my $re = glob_re($head);
        for my $name ($entries->($d)) {
            next if $name =~ /\A\./ && $head !~ /\A\./;
            next unless glob_match($re, $head, $name);
            my $rel = $join->($d, $name);
            my @st  = lstat $rel;
            my $dir = @st && S_ISDIR($st[2]);
            if (@rest) {
                $walk_glob->($rel, \@rest) if $dir;
            } elsif ($dir) {
                $walk_all->($rel);
            } else {
                $add->($rel, \@st);
            }
        }
    };

    my @out_st = lstat 'outputs';
    $walk_all->('outputs') if @out_st && S_ISDIR($out_st[2]);
    for my $pattern (ref $spec->{paths} eq 'ARRAY' ? @{ $spec->{paths} } : ()) {
        next unless is_str($pattern);
        my @parts = grep { $_ ne '' } split m{/}, $pattern;
        $walk_glob->('', \@parts) if @parts;
    }

    my %done;
    for my $f (@found) {
        my ($rel, $st) = @$f;
        next if $done{$rel}++;
        if (!utf8_valid($rel)) {
            $leave_out->(utf8_fix($rel), 'the name is not UTF-8');
            next;
        }
        if ($rel =~ /[\x00-\x1f\x7f]/ || length($rel) > 1024) {
            $leave_out->($rel, 'the name is not allowed');
            next;
        }
        my ($mode, $nlink, $size) = @{$st}[2, 3, 7];
        if (S_ISLNK($mode)) {
            $leave_out->($rel, 'a symbolic link (never followed)') unless package_link($rel);
            next;
        }
        if (!S_ISREG($mode)) {
            $leave_out->($rel, 'not a regular file');
            next;
        }
        if ($nlink > 1) {
            $leave_out->($rel, 'a hard-linked file', $size);
            next;
        }
        if ($n_files >= $max_files) {
            $leave_out->($rel, 'over the file count limit', $size, 1);
            next;
        }
        if ($size > $max_file) {
            $leave_out->($rel, 'over the per-file size limit', $size, 1);
            next;
        }
        if ($size > $total_left) {
            $leave_out->($rel, 'over the total size limit', $size, 1);
            next;
        }
        my $fh;
        if (!sysopen($fh, $rel, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)) {
            $leave_out->($rel, "cannot be opened: $!");
            next;
        }
        my ($data, $why) = ('', undef);
        my @st2  = stat $fh;
        my $real = @st2 ? readlink('/proc/self/fd/' . fileno($fh)) : undef;
        if (!defined $real) {
            $why = "cannot be read: $!";
        } elsif ($st2[0] != $st->[0] || $st2[1] != $st->[1] || $real ne ($cwd eq '/' ? '' : $cwd) . "/$rel") {
            # Not the file the walk saw, or not inside the working directory.
            $why = 'changed while being read';
        } else {
            while (length($data) <= $max_file) {
                my $want = $max_file + 1 - length($data);
                my $got  = sysread($fh, $data, $want < (1 << 20) ? $want : 1 << 20, length $data);
                if (!defined $got) {
                    next if $!{EINTR};
                    $why = "cannot be read: $!";
                    last;
                }
                last if $got == 0;
            }
        }
        close $fh;
        if (defined $why) {
            $leave_out->($rel, $why);
            next;
        }
        if (length($data) > $max_file || length($data) > $total_left) {
            $leave_out->($rel, 'grew past the size limit while being read', length($data), 1);
            next;
        }
        $send->($rel, $data);
        $n_files++;
    }
    # Named: what was refused for what it is before what the caps turned
    # away (stable: in walk order within each).
    my @named = ((grep { !$_->[0] } @lefts), (grep { $_->[0] } @lefts));
    splice(@named, $LEFT_REPORT) if @named > $LEFT_REPORT;
    for my $l (@named) {
        my (undef, $p, $reason, $size) = @$l;
        my $rec = '{"path":' . jstr(prefix_chars($p, 256)) . ',"reason":' . jstr($reason);
        $rec .= ',"size":' . int($size) if defined $size;
        frame('L', $rec . '}');
    }
    $files_json = '{"sent":' . $sent . ',"left_out":' . $left_out;
    $files_json .= ',"walk_stopped":' . $WALK_LIMIT if $stopped;
    $files_json .= '}';
}

# Sets env (the request's "env") in the runner's own environment.
sub set_env {
    my ($env) = @_;
    runner_fail('request env must be an object') unless ref $env eq 'HASH';
    for my $k (sort keys %$env) {
        my $v = $env->{$k};
        if (!is_str($v) || $k eq '' || $k =~ /[=\0]/ || $v =~ /\0/) {
            runner_fail('request env: bad variable ' . quote($k, 64));
        }
        # Here, not in the container's configuration: the engine keeps that on
        # disk. %ENV is the process's environment: every child inherits it.
        $ENV{$k} = $v;
    }
}

# The request's files, written (the daemon checked every path,
# sandbox/output/workpath.h; this is the same rule again).
sub write_inputs {
    my ($files) = @_;
    for my $f (@$files) {
        runner_fail('request files: an entry is not an object') unless ref $f eq 'HASH';
        my ($p, $content, $enc) = @{$f}{qw(path content encoding)};
        if (   !is_str($p)
            || !is_str($content)
            || !is_str($enc)
            || ($enc ne 'utf-8' && $enc ne 'base64')
            || $p eq ''
            || $p =~ m{\A/}
            || $p =~ /\0/
            || grep { $_ eq '' || $_ eq '.' || $_ eq '..' } split(m{/}, $p, -1))
        {
            runner_fail('request files: bad entry ' . (is_str($p) ? quote($p) : 'null'));
        }
        or_fail(
            'cannot write the file ' . quote($p),
            sub {
                my $data = $content;
                if ($enc eq 'base64') {
                    require MIME::Base64;
                    $data = MIME::Base64::decode_base64($content);
                }
                make_dirs($1) if $p =~ m{\A(.*)/};
                write_file($p, $data, 0644);
            });
    }
}

# Variable names: the daemon checked them (tools/variables.h); this is the
# part of its rule that makes them environment names, and MCPSBX_* is the
# runner's own. The values are strings without NUL (the daemon leaves such a
# string in the file only). Returns the names, sorted (none for undef).
sub check_variables_env {
    my ($variables_env) = @_;
    return () unless defined $variables_env;
    my @names = sort keys %$variables_env;
    for my $name (@names) {
        if ($name !~ /\A[A-Za-z_][A-Za-z0-9_]*\z/ || length($name) > 128 || $name =~ /\AMCPSBX_/) {
            runner_fail('variable ' . quote($name, 128) . ' is not allowed');
        }
        my $v = $variables_env->{$name};
        runner_fail('request variables_env: bad value of ' . quote($name, 128)) if !is_str($v) || $v =~ /\0/;
    }
    return @names;
}

# ---- package sets (runner.h, "packages") ------------------------------------
# The request's list under $key, checked as runner_packages.h does.
sub package_sets {
    my ($v, $key) = @_;
    return () unless defined $v;
    if (ref $v ne 'ARRAY' || @$v > $MAX_PACKAGE_SETS) {
        runner_fail("request $key must be a list of at most $MAX_PACKAGE_SETS package sets");
    }
    my @out;
    for my $d (@$v) {
        my $rest = is_str($d) && index($d, "$PACKAGES_ROOT/") == 0 ? substr($d, length($PACKAGES_ROOT) + 1) : '';
        if (   $rest eq ''
            || length($d) > $MAX_PACKAGE_PATH
            || grep { $_ !~ /\A[A-Za-z0-9._-]+\z/ || $_ eq '.' || $_ eq '..' } split(m{/}, $rest, -1))
        {
            runner_fail("request $key: " . (is_str($d) ? quote($d, 300) : 'not a string')
                    . " is not a package set directory under $PACKAGES_ROOT/ (no empty, '.' or '..' parts)");
        }
        runner_fail("request $key: the package set $d is not there") unless -d $d;
        push @out, $d unless grep { $_ eq $d } @out;
    }
    return @out;
}

# The request's sets, checked before anything is written.
sub check_packages {
    my ($req) = @_;
    @cell_sets = package_sets($req->{packages}, 'packages');
    runner_fail('request add_packages outside a session cell') if !$session && defined $req->{add_packages};
    my %had = map { $_ => 1 } @session_sets;
    @cell_adds = grep { !$had{$_} } package_sets($req->{add_packages}, 'add_packages');
    if (@session_sets + @cell_adds > $MAX_PACKAGE_SETS) {
        runner_fail("a session takes at most $MAX_PACKAGE_SETS package sets");
    }
}

# Links every package at the top of each set's node_modules/ (each
# @scope/name) into node_modules/ of the working directory, a real
# directory, for a Node program the language runs (TypeScript's): bare names
# resolve from its files, a package's own requires from its real place in
# its set. An entry already there is kept. Returns the links made. Dies.
sub link_packages {
    my @made;
    my $list = sub {
        opendir(my $dh, $_[0]) or return ();
        my @names = sort grep { !/\A\./ } readdir $dh;    # .bin, .package-lock.json
        closedir $dh;
        return @names;
    };
    my $ensure = sub {
        mkdir($_[0], 0755) or $!{EEXIST} or die "cannot make $_[0]: $!\n";
        die "$_[0] is not a directory\n" if -l $_[0] || !-d _;
    };
    for my $set (@_) {
        my $src = "$set/node_modules";
        for my $name ($list->($src)) {
            $ensure->('node_modules');
            my @rel = ($name);
            if ($name =~ /\A@/) {
                $ensure->("node_modules/$name");
                @rel = map {"$name/$_"} $list->("$src/$name");
            }
            for my $r (@rel) {
                if (symlink("$src/$r", "node_modules/$r")) {
                    push @made, "node_modules/$r";
                } elsif (!$!{EEXIST}) {
                    die "cannot link node_modules/$r: $!\n";
                }
            }
        }
    }
    return @made;
}

# After write_inputs: the session's new sets for good, the request's own
# for this run (a cell's until each_cell takes them off). Sets in gem's
# layout (a specifications/ directory: Ruby's) go on GEM_PATH instead,
# ahead of the image's own gems, which the trailing ':' keeps; a session
# cell's %ENV starts again from the session's, so the cell's sets leave
# with it.
sub use_packages {
    or_fail(
        'cannot link the package sets',
        sub {
            link_packages(@cell_adds);
            push @session_sets, @cell_adds;
            @cell_adds  = ();
            @cell_links = link_packages(@cell_sets);
        });
    my @gems = grep { -d "$_/specifications" } (@cell_sets, @session_sets);
    $ENV{GEM_PATH} = join(':', @gems) . ':' . ($ENV{GEM_PATH} // '') if @gems;
}

# One of link_packages' links: not the program's file to return.
sub package_link {
    my $t = readlink($_[0]);
    return defined $t && index($t, "$PACKAGES_ROOT/") == 0;
}

# ---- one run: a one-shot request, or a session's cell ----------------------
# Ends in finish: the runner exits, or in a session dies with $CELL_END.
# A request's parts every mode takes alike, checked: code, stdin, the
# variables as the daemon made them for this runner (the file's bytes and
# the environment's strings; their JSON is not read here), files, outputs.
sub request_parts {
    my ($req) = @_;
    my $code  = delete $req->{code};
    my $stdin = delete($req->{stdin}) // '';
    runner_fail('request code/stdin must be strings') unless is_str($code) && is_str($stdin);
    runner_fail('request variables are not for the generic runner') if exists $req->{variables};
    my $variables_file = delete $req->{variables_file};
    my $variables_env  = $req->{variables_env};
    runner_fail('request variables_file must be a string') if defined $variables_file && !is_str($variables_file);
    runner_fail('request variables_env must be an object') if defined $variables_env  && ref $variables_env ne 'HASH';
    my $files   = $req->{files} // [];
    my $outputs = $req->{outputs};
    if (ref $files ne 'ARRAY' || (defined $outputs && ref $outputs ne 'HASH')) {
        runner_fail('request files must be a list and outputs an object');
    }
    runner_fail('check is not supported by the generic runner') if is_bool($req->{check}) && $req->{check};
    check_packages($req);
    return ($code, $stdin, $variables_file, $variables_env, $files, $outputs);
}

sub run_cell {
    my ($req) = @_;
    my $env = $req->{env} // {};
    my ($code, $stdin, $variables_file, $variables_env, $files, $outputs) = request_parts($req);
    set_env($env);

    my $program = $req->{program};
    runner_fail('request program must be an object') unless ref $program eq 'HASH';
    $source_file = $program->{source_file};
    # The language table's rule (sandbox/languages/langtable.h): a plain name, not hidden.
    if (!is_str($source_file) || $source_file !~ /\A[A-Za-z0-9_+-][A-Za-z0-9._+-]{0,63}\z/) {
        runner_fail('request program: bad source_file');
    }
    my $compile   = $program->{compile};
    my $typecheck = $program->{typecheck};
    runner_fail('request program: bad run')       unless argv_ok($program->{run});
    runner_fail('request program: bad compile')   if defined $compile   && !argv_ok($compile);
    runner_fail('request program: bad typecheck') if defined $typecheck && !argv_ok($typecheck);
    my $blocks = $program->{typecheck_blocks};
    runner_fail('request program: bad typecheck_blocks') if defined $blocks && !is_bool($blocks);
    $blocks = defined $blocks && $blocks ? 1 : 0;
    my $step_ms = $STEP_DEFAULT;
    if (defined $program->{compile_timeout_ms}) {
        my $t = $program->{compile_timeout_ms};
        if (!is_whole($t) || $t < 1 || $t > 9999999999) {
            runner_fail('request program: bad compile_timeout_ms');
        }
        $step_ms = 0 + $t;
    }

    check_variables_env($variables_env);

    # The caller's files, outputs/, the source, stdin, the variables.
    $cwd = POSIX::getcwd();
    runner_fail("cannot find the working directory: $!") unless defined $cwd;
    @cwd_id = (stat '.')[0, 1];

    write_inputs($files);
    $files = undef;
    use_packages();
    if (defined $outputs && !mkdir('outputs', 0755) && !$!{EEXIST}) {
        runner_fail("cannot make outputs/: $!");
    }

    my ($stdin_fh, $null_fh);
    # What a compile in this session already made of this source.
    my $build_key;
    if (defined $compile && $session) {
        require Digest::SHA;
        $build_key = join("\0", Digest::SHA::sha256_hex($code), @$compile);
    }
    {
        or_fail("cannot write the source file $source_file",
            sub { write_file($source_file, $code, 0644) });
        $code = undef;
        # An unlinked regular file as the program's fd 0: it reads exactly the
        # given bytes, then EOF, through any API (read(0), /dev/stdin, its own
        # children).
        or_fail(
            'cannot prepare the working directory',
            sub {
                sysopen($stdin_fh, $STDIN_NAME, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW, 0600)
                    or die "$!\n";
                unlink($STDIN_NAME) or die "$!\n";
                write_all($stdin_fh, $stdin);
                sysseek($stdin_fh, 0, SEEK_SET) or die "$!\n";
                # The compile step and the typecheck read nothing.
                sysopen($null_fh, '/dev/null', O_RDONLY) or die "/dev/null: $!\n";
            });
        $stdin = undef;
    }

    # Variables: the whole object as JSON in a file the program finds by
    # $MCPSBX_VARIABLES (variables_file's bytes: the daemon's text of it, numbers
    # exactly as sent), and each string, number or boolean as an environment
    # variable of the same name (variables_env: the daemon made the strings).
    # Set after env: a variable wins over a request env entry of its name.
    if (defined $variables_file) {
        or_fail('cannot write the variables', sub { write_file($VARS_NAME, $variables_file, 0400) });
        $variables_file = undef;
        $ENV{MCPSBX_VARIABLES} = ($cwd eq '/' ? '' : $cwd) . "/$VARS_NAME";
    }
    if (defined $variables_env) {
        $ENV{$_} = $variables_env->{$_} for sort keys %$variables_env;
    }

    # Compile, typecheck.
    # Their output goes to stderr (stdout is the program's), their stdin is
    # /dev/null. A failed compile (or blocking typecheck) ends the run: the
    # program does not run and no files are returned.
    my @notes;
    # How long each step took, in the record ("steps_ms"): the benchmark's
    # compile share; the daemon does not read it.
    my %took;
    my $t_step = Time::HiRes::time();
    my $lap = sub {
        my ($name) = @_;
        my $now = Time::HiRes::time();
        $took{$name} = sprintf('%.1f', ($now - $t_step) * 1000);
        $t_step = $now;
    };
    # A program the run finds as ./name must still be there to skip the compile.
    my $built = $program->{run}[0];
    if (defined $compile && !(defined $build_key && defined $compiled && $compiled eq $build_key
        && !($built =~ m{\A\./} && !-e $built)))
    {
        $compiled = undef;
        my ($st, $timed_out) = wait_step(spawn($compile, $null_fh, 1), $step_ms);
        $lap->('compile');
        finish($st, undef, step_error('compile_error', $st, $timed_out)) if $st != 0;
        $compiled = $build_key;
    }
    if (defined $typecheck) {
        my ($st, $timed_out) = defined $checker_pid ? warm_check($step_ms) : ();
        # Which one checked, for the tests and the benchmark (the daemon ignores it).
        push @notes, '"typecheck_by":' . (defined $st ? '"warm"' : '"cold"') if $warm && @ARGV > 1;
        ($st, $timed_out) = wait_step(spawn($typecheck, $null_fh, 1), $step_ms) unless defined $st;
        $lap->('typecheck');
        if ($st != 0) {
            finish($st, undef, step_error('compile_error', $st, $timed_out), @notes) if $blocks;
            # Only reported: its output is on stderr already; the record names
            # it for whoever wants it.
            if ($timed_out) {
                eval { write_all(\*STDERR, "mcpsbx: the typecheck was stopped after $step_ms ms\n") };
            }
            push @notes, step_error('typecheck_error', $st, $timed_out);
        }
    }
    if (defined $checker_pid) {
        # Not used (no typecheck asked): it must not live on beside the program.
        close($checker_in);
        close($checker_out);
        end_checker($checker_pid);
        $checker_pid = undef;
    }
    close($null_fh);

    # Run.
    # stdout and stderr are the runner's own: the program's output streams to
    # the daemon as it is written. No timeout here: the daemon stops the whole
    # sandbox at the run's deadline.
    # The preload lives in the sandbox's /dev/shm where there is one, out of
    # the program's working directory, under a name of this runner's own.
    my $stdio_path;
    {
        my $dir = -d '/dev/shm' && -w _ ? '/dev/shm' : ($cwd eq '/' ? '' : $cwd);
        $stdio_path = "$dir/" . ($dir eq '/dev/shm' ? ".mcpsbx-stdio-$$.js" : $STDIO_NAME);
        or_fail("cannot prepare the program's output", sub { write_new_file($stdio_path, $STDIO_JS, 0444) });
        (my $quoted = $stdio_path) =~ s/(["\\])/\\$1/g;
        my $own = $ENV{NODE_OPTIONS};
        $ENV{NODE_OPTIONS} = "--require \"$quoted\"" . (defined $own && $own ne '' ? " $own" : '');
    }
    my $ooms_before = oom_kills();
    my $pid = spawn($program->{run}, $stdin_fh, 0);
    my $status;
    while (!$session) {
        my $r = waitpid($pid, 0);
        if ($r == $pid) {
            $status = status_of($?);
            last;
        }
        runner_fail("cannot wait for the program: $!") unless $!{EINTR};
    }
    $status = wait_cell($pid) if $session;
    # Only now, with the program gone: whatever it left behind in its group
    # (`cmd &`) must not write after the record or change files while they are
    # returned. Not before it exited: its children are part of the run while it
    # lives (it may be waiting for them). The group id stays reserved while any
    # member lives, so the kill cannot reach anything else.
    $lap->('run');
    kill_group($pid);
    unlink($stdio_path);
    close($stdin_fh);
    # A SIGKILL nobody here sent is the kernel's OOM killer when the cgroup
    # counted one (or, where the count cannot be read, by far the likeliest);
    # after an interrupt only a count that rose says so.
    if ($status == 128 + 9) {
        my $after = oom_kills();
        $memory_error = $interrupted
            ? defined $after && defined $ooms_before && $after > $ooms_before
            : !defined $after || !defined $ooms_before || $after > $ooms_before;
    }

    if (defined $outputs) {
        or_fail('cannot return the output files', sub { send_outputs($outputs) });
    }
    push @notes, '"session":{"interrupted":true}' if $interrupted;
    push @notes, '"steps_ms":{' . join(',', map { "\"$_\":$took{$_}" } sort keys %took) . '}';
    finish($status, undef, @notes);
}

# ---- the request: "mcpsbx/1 <len>\n" + <len> bytes of JSON -------------------
# One frame of fh: ('request', body), ('interrupt', nonce) (sessions only)
# or ('eof') (a session's end). The header is read a byte at a time so
# nothing past the frame is consumed.
sub read_frame {
    my ($fh, $max_header) = @_;
    my $header = '';
    while (1) {
        my $b = read_some($fh, 1);
        if ($b eq '') {
            return ('eof') if $session && $header eq '';
            runner_fail('end of input before the request header');
        }
        last if $b eq "\n";
        $header .= $b;
        runner_fail('request header too long') if length($header) > $max_header;
    }
    my ($proto, $size) = split / /, $header, 2;
    if ($session && ($proto // '') eq 'mcpsbx/1' && ($size // '') =~ /\Ainterrupt ([0-9a-f]{32})\z/) {
        return ('interrupt', $1);
    }
    if (($proto // '') ne 'mcpsbx/1' || !defined $size || $size !~ /\A[0-9]{1,10}\z/) {
        runner_fail('bad request header');
    }
    $size = 0 + $size;
    runner_fail('request too large') if $size > $MAX_REQUEST;
    my $body = '';
    while (length($body) < $size) {
        my $want = $size - length($body);
        my $b    = read_some($fh, $want < (1 << 20) ? $want : 1 << 20);
        runner_fail('end of input inside the request') if $b eq '';
        $body .= $b;
    }
    return ('request', $body);
}

# The request of a body (a reference: the text is decoded in place, then
# dropped); sets the nonce.
sub take_request {
    my ($body) = @_;
    my $req;
    or_fail('request is not JSON', sub { $req = decode_request($$body) });
    $$body = undef;
    runner_fail('request is not a JSON object') unless ref $req eq 'HASH';
    my $n = $req->{nonce};
    runner_fail('request has no valid nonce') unless is_str($n) && $n =~ /\A[0-9a-f]{32}\z/;
    $nonce = $n;
    return $req;
}

# The request's "session" member: 'begin', 'cell', or '' when absent.
sub session_kind {
    my ($req) = @_;
    return '' unless exists $req->{session};
    my $s = $req->{session};
    runner_fail('request session must be an object') unless ref $s eq 'HASH';
    for my $kind ('begin', 'cell') {
        return $kind if is_bool($s->{$kind}) && $s->{$kind};
    }
    runner_fail('request session is neither begin nor cell');
}

# ---- session mode ----------------------------------------------------------
my $ctl;            # the private copy of the request descriptor
my $ctl_eof = 0;    # it ended: the session ends after the running cell
my $pending;        # a request that came while a cell ran (the daemon sends none)
my %base_env;       # the environment every cell starts from

# Waits for a cell's program, acting on the frames that come meanwhile:
# an interrupt for this cell (SIGINT to its group, SIGKILL after
# $INT_GRACE), the end of the request stream (SIGKILL). Returns status_of.
sub wait_cell {
    my ($pid) = @_;
    my ($int_at, $killed);
    # Only to wake select when the program ends.
    local $SIG{CHLD} = sub { };
    while (1) {
        my $r = waitpid($pid, POSIX::WNOHANG());
        return status_of($?) if $r == $pid;
        runner_fail("cannot wait for the program: $!") if $r < 0 && !$!{EINTR};
        # SIGCHLD may come just before select: a short nap bounds that wait.
        my $timeout = $CHILD_NAP;
        if (defined $int_at && !$killed) {
            my $left = $int_at + $INT_GRACE - Time::HiRes::time();
            if ($left <= 0) {
                kill('KILL', -$pid);
                $killed = 1;
            } elsif ($left < $timeout) {
                $timeout = $left;
            }
        }
        my $bits = '';
        vec($bits, fileno($ctl), 1) = 1 unless $ctl_eof;
        my $ready = $bits;
        next if wait_bits($ready, $timeout) <= 0 || $ready eq "\0" x length $ready;
        my ($kind, $what) = read_frame($ctl, $MAX_CONTROL);
        if ($kind eq 'eof') {
            $ctl_eof = 1;
            kill('KILL', -$pid);
        } elsif ($kind eq 'interrupt') {
            # Another nonce is a late interrupt of an earlier cell: ignored.
            if ($what eq $nonce && !defined $int_at) {
                kill('INT', -$pid);
                $int_at      = Time::HiRes::time();
                $interrupted = 1;
            }
        } elsif (!defined $pending) {
            $pending = $what;
        } else {
            kill('KILL', -$pid);
            runner_fail('more than one request came while a cell ran');
        }
    }
}

# Ends a cell's turn: whatever the step died with but the cell's end is
# the runner's failure.
sub as_cell {
    my ($step) = @_;
    return if eval { $step->(); 1 };
    my $e = $@;
    die $e unless ref $e && $e == $CELL_END;
}

# The begin request: keeps env, says the mode, then runs cells until the
# request descriptor ends.
sub session_main {
    my ($req) = @_;
    set_env($req->{env} // {});
    # The cells' programs get their stdin files on fd 0; the frames come
    # on a copy of the request descriptor none of them inherits.
    open($ctl, '<&', \*STDIN) or runner_fail("cannot keep the request descriptor: $!");
    open(STDIN, '<', '/dev/null') or runner_fail("cannot reopen stdin: $!");
    $session  = 1;
    %base_env = %ENV;
    my $shell = shell_program($req->{program});
    $req = undef;
    shell_main($shell) if defined $shell;
    as_cell(sub { finish(0, undef, '"session":{"mode":"process"}') });
    each_cell(
        sub {
            # Each cell's env and variables are its own.
            %ENV = %base_env;
            run_cell($_[0]);
        },
        sub {
            return unless defined $checker_pid;
            close($checker_in);
            close($checker_out);
            end_checker($checker_pid);
            $checker_pid = undef;
        });
    POSIX::_exit(0);
}

# Runs each cell request with $run until the request descriptor ends (or
# $run ends the session), then $after (if any) once the cell's record is out.
sub each_cell {
    my ($run, $after) = @_;
    while (!$ctl_eof) {
        ($nonce, $files_json, $memory_error, $interrupted) = (undef, undef, 0, 0);
        my ($kind, $what) = defined $pending ? ('request', $pending) : read_frame($ctl, $MAX_CONTROL);
        $pending = undef;
        last if $kind eq 'eof';
        next if $kind eq 'interrupt';    # no cell runs: nothing to stop
        as_cell(
            sub {
                my $cell = take_request(\$what);
                runner_fail('a session request that is not a cell') if session_kind($cell) ne 'cell';
                $run->($cell);
            });
        unlink @cell_links;
        @cell_links = ();
        $after->() if $after;
    }
}

# ---- shell mode: one persistent bash for a bash session ----------------------
# The begin request's program runs the source file with bash and nothing
# else (the language table's bash: ["bash", "main.sh"]): the session keeps
# one interactive bash, so variables, functions and cd persist. Interactive
# is what makes a SIGINT abort the running command line, loops included, and
# go back to reading commands. Its stdin is a pipe from this runner, which
# writes one line per cell; it reports each line's end on a status pipe
# ($SHELL_STATUS_FD, high so a cell's own `exec 3<file` cannot take it).
my $SHELL_STATUS_FD = 63;
my $SHELL_ERR_FD    = 62;    # its stderr until its first line takes it back

sub shell_program {
    my ($program) = @_;
    return undef unless ref $program eq 'HASH' && argv_ok($program->{run});
    my $run = $program->{run};
    my $src = $program->{source_file};
    return undef if defined $program->{compile} || defined $program->{typecheck};
    return undef unless @$run == 2 && $run->[0] =~ m{(?:\A|/)bash\z} && is_str($src) && $run->[1] eq $src;
    return undef unless $src =~ /\A[A-Za-z0-9_+-][A-Za-z0-9._+-]{0,63}\z/;
    return $program;
}

# A shell-quoted word.
sub sh_quote {
    my ($s) = @_;
    $s =~ s/'/'\\''/g;
    return "'$s'";
}

my ($shell_pid, $shell_in, $shell_status, $shell_buf) = (undef, undef, undef, '');

sub start_shell {
    my ($in_r, $in_w, $st_r, $st_w);
    pipe($in_r, $in_w) && pipe($st_r, $st_w) or runner_fail("cannot start the shell: $!");
    my $pid = fork;
    runner_fail("cannot start the shell: $!") unless defined $pid;
    if ($pid == 0) {
        @SIG{qw(PIPE INT QUIT)} = ('DEFAULT') x 3;
        POSIX::setpgid(0, 0);
        # Its start-up warnings (no job control without a terminal) go to
        # /dev/null; stderr is kept on $SHELL_ERR_FD for its first line.
        my $ok = defined POSIX::dup2(fileno($in_r), 0)
            && defined POSIX::dup2(fileno($st_w), $SHELL_STATUS_FD)
            && defined POSIX::dup2(2, $SHELL_ERR_FD);
        my $null = POSIX::open('/dev/null', POSIX::O_WRONLY());
        $ok &&= defined $null && defined POSIX::dup2($null, 2);
        if ($ok) {
            @ENV{qw(PS1 PS2 PS4)} = ('', '', '');
            no warnings 'exec';
            exec { 'bash' } 'bash', '--noprofile', '--norc', '--noediting', '-i';
        }
        POSIX::_exit(127);
    }
    POSIX::setpgid($pid, $pid);
    close($in_r);
    close($st_w);
    ($shell_pid, $shell_in, $shell_status) = ($pid, $in_w, $st_r);
    write_all($shell_in, "exec 2>&$SHELL_ERR_FD $SHELL_ERR_FD>&-; set +H; PS0=; PROMPT_COMMAND=;"
          . ' mcpsbx_cell() { . "$1"; }' . "\n");
}

# The members of the shell's process group but the shell: the commands of
# this cell and the background jobs of earlier ones.
sub shell_children {
    my @pids;
    opendir(my $d, '/proc') or return ();
    for my $p (grep { /\A[0-9]+\z/ && $_ != $shell_pid } readdir $d) {
        open(my $fh, '<', "/proc/$p/stat") or next;
        my $stat = <$fh> // '';
        close($fh);
        # After the name, which may hold anything: state, ppid, pgrp.
        push @pids, 0 + $p if $stat =~ /\) \S+ \d+ (\d+) / && $1 == $shell_pid;
    }
    closedir($d);
    return @pids;
}

# Waits for the shell's "done <n> <status>" line of cell n, acting on the
# frames that come meanwhile; before: the group's members when the cell
# began. Returns the status, or (undef, wait status) when the shell ended.
sub shell_wait {
    my ($n, $before) = @_;
    my $int_at;
    local $SIG{CHLD} = sub { };
    while (1) {
        while ($shell_buf =~ s/\A([^\n]*)\n//) {
            my $l = $1;
            # Another n: a line of an earlier, interrupted cell.
            return 0 + $2 if $l =~ /\Adone (\d+) (\d+)\z/ && $1 == $n;
        }
        my $r = waitpid($shell_pid, POSIX::WNOHANG());
        return (undef, $?) if $r == $shell_pid;
        # A SIGINT that meets a command between fork and exec misses it (the
        # child still has bash's handler) while bash abandons the line, and
        # bash then waits for that command before its next one. Until the
        # runner's line says the shell is free, each grace sends one more to
        # the commands this cell started: never to the shell, which may be
        # reading that line, nor to earlier cells' background jobs.
        if (defined $int_at && Time::HiRes::time() - $int_at >= $INT_GRACE) {
            kill('INT', grep { !$before->{$_} } shell_children());
            $int_at = Time::HiRes::time();
        }
        my $bits = '';
        vec($bits, fileno($shell_status), 1) = 1;
        vec($bits, fileno($ctl), 1) = 1 unless $ctl_eof;
        my $ready = $bits;
        next if wait_bits($ready, $CHILD_NAP) <= 0;
        if (vec($ready, fileno($shell_status), 1)) {
            my $got = sysread($shell_status, $shell_buf, 4096, length $shell_buf);
            if (defined $got && $got == 0) {
                # Nothing holds the status pipe: the shell is gone.
                1 while waitpid($shell_pid, 0) < 0 && $!{EINTR};
                return (undef, $?);
            }
            substr($shell_buf, 0, length($shell_buf) - 4096) = '' if length($shell_buf) > 8192;
        }
        next unless !$ctl_eof && vec($ready, fileno($ctl), 1);
        my ($kind, $what) = read_frame($ctl, $MAX_CONTROL);
        if ($kind eq 'eof') {
            $ctl_eof = 1;
            kill('KILL', -$shell_pid);
            POSIX::_exit(0);
        } elsif ($kind eq 'interrupt') {
            # Another nonce is a late interrupt of an earlier cell: ignored.
            # The aborted line's echo never runs: the runner sends its own,
            # which the shell reads once it is back at its prompt (never,
            # if the cell made it ignore SIGINT). The `:` first: bash waits
            # for a missed command at the end of the next one, so the echo
            # runs only once the cell's foreground command is gone.
            if ($what eq $nonce && !$interrupted) {
                kill('INT', -$shell_pid);
                $int_at      = Time::HiRes::time();
                $interrupted = 1;
                eval { write_all($shell_in, ":; echo \"done $n 130\" >&$SHELL_STATUS_FD\n") };
            }
        } elsif (!defined $pending) {
            $pending = $what;
        } else {
            kill('KILL', -$shell_pid);
            runner_fail('more than one request came while a cell ran');
        }
    }
}

# One cell in the shell: its files, stdin and variables, one command line,
# its outputs and record.
my $shell_cells = 0;

sub shell_cell {
    my ($req, $program) = @_;
    my ($code, $stdin, $variables_file, $variables_env, $files, $outputs) = request_parts($req);
    my $dir = $cwd eq '/' ? '' : $cwd;
    my $line = '';
    for my $name (check_variables_env($variables_env)) {
        $line .= "export $name=" . sh_quote($variables_env->{$name}) . '; ';
    }
    write_inputs($files);
    use_packages();
    if (defined $outputs && !mkdir('outputs', 0755) && !$!{EEXIST}) {
        runner_fail("cannot make outputs/: $!");
    }
    or_fail("cannot write the source file $program->{source_file}",
        sub { write_file($program->{source_file}, $code, 0644) });
    or_fail('cannot prepare the working directory', sub { write_file($STDIN_NAME, $stdin, 0600) });
    if (defined $variables_file) {
        or_fail('cannot write the variables', sub { write_file($VARS_NAME, $variables_file, 0400) });
        $line .= 'export MCPSBX_VARIABLES=' . sh_quote("$dir/$VARS_NAME") . '; ';
    }
    my $n = ++$shell_cells;
    $line .= 'mcpsbx_cell ' . sh_quote("$dir/$program->{source_file}") . ' <' . sh_quote("$dir/$STDIN_NAME")
        . "; echo \"done $n \$?\" >&$SHELL_STATUS_FD\n";
    my $ooms_before = oom_kills();
    my %before      = map { $_ => 1 } shell_children();
    or_fail('cannot reach the shell', sub { write_all($shell_in, $line) });
    my ($status, $ended) = shell_wait($n, \%before);
    unlink($STDIN_NAME);
    my $after = oom_kills();
    $memory_error = 1 if defined $after && defined $ooms_before && $after > $ooms_before;
    my @notes;
    if (!defined $status) {
        # The shell ended (`exit`, a signal): the session with it.
        $status = status_of($ended);
        kill('KILL', -$shell_pid);
        push @notes, '"session":{"ended":"the shell exited"}';
        $session = 0;    # finish exits after this record
    } elsif ($interrupted) {
        push @notes, '"session":{"interrupted":true}';
    }
    if (defined $outputs) {
        or_fail('cannot return the output files', sub { send_outputs($outputs) });
    }
    finish($status, undef, @notes);
}

# The begin request's session, in the shell: says so, then runs cells
# until the request descriptor ends or the shell does.
sub shell_main {
    my ($program) = @_;
    $cwd = POSIX::getcwd();
    runner_fail("cannot find the working directory: $!") unless defined $cwd;
    @cwd_id = (stat '.')[0, 1];
    start_shell();
    as_cell(sub { finish(0, undef, '"session":{"mode":"shell"}') });
    each_cell(sub { shell_cell($_[0], $program) });
    kill('KILL', -$shell_pid);
    POSIX::_exit(0);
}

# ---- main ------------------------------------------------------------------
if (@ARGV >= 1 && $ARGV[0] eq 'warm') {
    $warm = 1;
} elsif (@ARGV) {
    runner_fail('usage: perl -e <runner> [warm [checker argv...]]');
}
if ($warm) {
    # What sending files needs, loaded while nobody waits.
    require Digest::SHA;
    require MIME::Base64;
    start_checker([@ARGV[1 .. $#ARGV]]) if @ARGV > 1;
    if (!eval { write_all(\*STDOUT, $READY); 1 }) {
        my $e = $@;
        chomp $e;
        runner_fail("cannot say ready: $e");
    }
}

my (undef, $body) = read_frame(\*STDIN, $MAX_HEADER);
if ($warm) {
    # The code reached this runner: from here on a failure is the run's.
    eval { write_all(\*STDOUT, $GO) };
}

my $req = take_request(\$body);
my $kind = session_kind($req);
session_main($req) if $kind eq 'begin';
runner_fail('a session cell without a session') if $kind eq 'cell';
run_cell($req);
