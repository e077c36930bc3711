# mcp-sandboxd egress forwarder (protocol: src/backend/docker/egress_sock.h).
# Started as `perl -e <this file> [-b] SOCKET PORT PROGRAM ARGS...` in a sandbox
# that has no network: listens on 127.0.0.1:PORT, leaves a detached relay
# that passes every TCP connection made there to the daemon's unix socket
# SOCKET (the egress gateway, an HTTP proxy), and executes PROGRAM in its
# own place with its standard streams untouched. Fails closed: when it
# cannot listen, PROGRAM never runs. The relay holds none of the program's
# standard streams (its own are /dev/null), so the program's output ends
# when the program does. perl-base only: Socket, POSIX, Errno, Fcntl.
#
# The relay is one process with one select loop over the listener and
# every connection: a fork and a perl per connection cost more than the
# request they carry, and would count against the sandbox's process cap.
#
# -b: the gateway's socket cannot be waited on (gVisor 20221219 passes a
# host socket through its file proxy as a descriptor that select and poll
# refuse with EPERM, while blocking reads and writes work). Then each
# connection is relayed by two processes, one per direction, each
# blocking in its read; at most CONNS_MAX connections at once.
use strict;
use warnings;
use Socket qw(PF_INET PF_UNIX SOCK_STREAM SOL_SOCKET SO_REUSEADDR SO_ERROR SOMAXCONN INADDR_LOOPBACK
  IPPROTO_TCP TCP_NODELAY SHUT_WR pack_sockaddr_in pack_sockaddr_un);
use POSIX ();
use Errno qw(EINTR EAGAIN EWOULDBLOCK EINPROGRESS ECONNABORTED);
use Fcntl qw(F_GETFL F_SETFL O_NONBLOCK);

# What a connection holds per direction, read but not yet written: a side
# is not read while its peer has not taken this much.
use constant BUF_MAX => 65536;
# Connections at once (each two descriptors, under the sandbox's nofile
# limit). Beyond it the relay stops accepting; the kernel's backlog holds
# the rest until one ends.
use constant CONNS_MAX => 256;
# A unix socket's connect cannot be waited for: with the gateway's backlog
# full it fails with EAGAIN and nothing signals room. So the oldest waiting
# connection is tried again after a pause that doubles from the first to
# the last value (seconds) until one gets through.
use constant RETRY_FIRST => 0.001;
use constant RETRY_LAST  => 0.05;
# How long the listener rests after an accept that failed for want of
# descriptors or memory (it stays readable: without a rest, a busy loop).
use constant ACCEPT_REST => 0.1;

# A connection's states: waiting for its turn to connect to the gateway,
# connecting, relaying, closed.
use constant { WAITING => 0, CONNECTING => 1, OPEN => 2, CLOSED => 3 };

sub fail { die "mcpsbx egress forwarder: $_[0]\n" }

my $blocking = @ARGV && $ARGV[0] eq '-b' ? shift(@ARGV) : 0;
my ($path, $port) = splice(@ARGV, 0, 2);
defined $port && $port =~ /\A[0-9]{1,5}\z/ && $port > 0 && $port < 65536 && @ARGV
  or fail("usage: [-b] SOCKET PORT PROGRAM ARGS...");

socket(my $listener, PF_INET, SOCK_STREAM, 0) or fail("socket: $!");
setsockopt($listener, SOL_SOCKET, SO_REUSEADDR, 1) or fail("setsockopt: $!");
bind($listener, pack_sockaddr_in($port, INADDR_LOOPBACK))
  or fail("cannot listen on 127.0.0.1:$port: $!");
listen($listener, SOMAXCONN) or fail("cannot listen on 127.0.0.1:$port: $!");

sub nonblocking {
    my ($fh) = @_;
    my $flags = fcntl($fh, F_GETFL, 0);
    return defined $flags && fcntl($fh, F_SETFL, $flags | O_NONBLOCK);
}

sub again { return $! == EAGAIN || $! == EWOULDBLOCK || $! == EINTR }

# A connection: {s => [TCP, UNIX], buf, eof, shut, state}. $buf[$i] was
# read from $s[$i] for $s[1 - $i]; $eof[$i]: $s[$i] ended; $shut[$i]:
# $s[1 - $i] was told so.
my (@conns, @waiting);

sub close_conn {
    my ($c) = @_;
    defined $_ && close($_) for @{ $c->{s} };
    $c->{state} = CLOSED;
}

# Starts $c's connection to the gateway: false when the gateway's backlog
# is full (try again later); any other failure closes $c, whose client
# then sees its connection end.
sub dial {
    my ($c) = @_;
    my $unix;
    if (!socket($unix, PF_UNIX, SOCK_STREAM, 0) || !nonblocking($unix)) {
        close_conn($c);
        return 1;
    }
    if (connect($unix, pack_sockaddr_un($path))) {
        $c->{state} = OPEN;
    } elsif ($! == EINPROGRESS) {
        $c->{state} = CONNECTING;
    } elsif (again()) {
        # A fresh socket next time: one whose connect failed is not
        # promised to take another.
        close($unix);
        return 0;
    } else {
        close($unix);
        close_conn($c);
        return 1;
    }
    $c->{s}[1] = $unix;
    return 1;
}

# Dials the waiting connections oldest first, so none overtakes another;
# false when the oldest must wait.
sub dial_waiting {
    while (@waiting) {
        dial($waiting[0]) or return 0;
        shift @waiting;
    }
    return 1;
}

sub accept_some {
    while (@conns < CONNS_MAX) {
        my $tcp;
        if (!accept($tcp, $listener)) {
            return again() || $! == ECONNABORTED;
        }
        nonblocking($tcp) or next;    # dropped: its client sees it end
        # What the relay reads it writes at once: Nagle's wait would only
        # add to the sender's own.
        setsockopt($tcp, IPPROTO_TCP, TCP_NODELAY, 1);
        my $c = { s => [ $tcp, undef ], buf => [ '', '' ], eof => [ 0, 0 ], shut => [ 0, 0 ], state => WAITING };
        push @conns, $c;
        push @waiting, $c;
    }
    return 1;
}

# What select should watch for $c.
sub want {
    my ($c, $rin, $win) = @_;
    my $s = $c->{s};
    if ($c->{state} == CONNECTING) {
        vec($$win, fileno($s->[1]), 1) = 1;
    } elsif ($c->{state} == OPEN) {
        for my $i (0, 1) {
            vec($$rin, fileno($s->[$i]), 1) = 1 if !$c->{eof}[$i] && length($c->{buf}[$i]) < BUF_MAX;
            vec($$win, fileno($s->[ 1 - $i ]), 1) = 1 if length($c->{buf}[$i]);
        }
    }
}

# One connection after select: what each side sent is written to the other
# as it can take it, and its end (a half-close) passed on with shutdown
# once its bytes are out. Both closed when both ends are passed on; any
# error closes both.
sub step {
    my ($c, $rout, $wout) = @_;
    my $s = $c->{s};
    if ($c->{state} == CONNECTING) {
        return if !vec($wout, fileno($s->[1]), 1);
        my $err = getsockopt($s->[1], SOL_SOCKET, SO_ERROR);
        if (!defined $err || unpack('i', $err)) {
            close_conn($c);
        } else {
            $c->{state} = OPEN;
        }
        return;
    }
    return if $c->{state} != OPEN;
    for my $i (0, 1) {
        my ($from, $to) = ($s->[$i], $s->[ 1 - $i ]);
        my $read = 0;
        if (vec($rout, fileno($from), 1)) {
            my $len = length($c->{buf}[$i]);
            my $n = sysread($from, $c->{buf}[$i], BUF_MAX - $len, $len);
            if (!defined $n) {
                return close_conn($c) if !again();
            } elsif ($n == 0) {
                $c->{eof}[$i] = 1;
            } else {
                $read = 1;
            }
        }
        # Just read: written at once rather than after another select, as
        # the peer can nearly always take it.
        if (length($c->{buf}[$i]) && ($read || vec($wout, fileno($to), 1))) {
            my $n = syswrite($to, $c->{buf}[$i]);
            if (!defined $n) {
                return close_conn($c) if !again();
            } else {
                substr($c->{buf}[$i], 0, $n, '');
            }
        }
        if ($c->{eof}[$i] && !length($c->{buf}[$i]) && !$c->{shut}[$i]) {
            shutdown($to, SHUT_WR);
            $c->{shut}[$i] = 1;
        }
    }
    close_conn($c) if $c->{shut}[0] && $c->{shut}[1];
}

# Accepts for as long as the sandbox lives. select waits with no timeout
# but while a connection waits for the gateway's backlog or the listener
# rests.
sub serve {
    local $SIG{PIPE} = 'IGNORE';
    nonblocking($listener) or return;
    my $retry = RETRY_FIRST;
    my $rest  = 0;
    for (;;) {
        $retry = RETRY_FIRST if dial_waiting();
        @conns = grep { $_->{state} != CLOSED } @conns;
        my ($rin, $win, $timeout) = ('', '', undef);
        if (@waiting) {
            $timeout = $retry;
            $retry = $retry * 2 > RETRY_LAST ? RETRY_LAST : $retry * 2;
        }
        if ($rest) {
            $timeout = ACCEPT_REST if !defined $timeout || $timeout > ACCEPT_REST;
            $rest = 0;
        } elsif (@conns < CONNS_MAX) {
            vec($rin, fileno($listener), 1) = 1;
        }
        want($_, \$rin, \$win) for @conns;
        my ($rout, $wout) = ($rin, $win);
        my $n = select($rout, $wout, undef, $timeout);
        if ($n < 0) {
            # Not a signal (none is handled): a lack of memory; rest.
            select(undef, undef, undef, ACCEPT_REST) if $! != EINTR;
            next;
        }
        next if $n == 0;
        $rest = !accept_some() if vec($rout, fileno($listener), 1);
        step($_, $rout, $wout) for @conns;
    }
}

# Blocking relay (-b), one direction: what $from sends goes to $to until
# $from ends, which is passed on with shutdown; any error ends it too.
sub copy_until_end {
    my ($from, $to) = @_;
    my $buf;
    for (;;) {
        my $n = sysread($from, $buf, BUF_MAX);
        if (!defined $n) {
            next if $! == EINTR;
            last;
        }
        last if $n == 0;
        for (my $off = 0; $off < $n;) {
            my $w = syswrite($to, $buf, $n - $off, $off);
            if (!defined $w) {
                next if $! == EINTR;
                shutdown($to, SHUT_WR);
                return;
            }
            $off += $w;
        }
    }
    shutdown($to, SHUT_WR);
}

# Blocking relay (-b): a process per connection that connects to the
# gateway and copies toward it, and a child of it that copies back.
sub relay_blocking {
    my ($tcp) = @_;
    socket(my $unix, PF_UNIX, SOCK_STREAM, 0) or return;
    connect($unix, pack_sockaddr_un($path)) or return;
    setsockopt($tcp, IPPROTO_TCP, TCP_NODELAY, 1);
    my $kid = fork();
    return if !defined $kid;
    if ($kid == 0) {
        copy_until_end($unix, $tcp);
        POSIX::_exit(0);
    }
    copy_until_end($tcp, $unix);
    waitpid($kid, 0);
}

sub serve_blocking {
    local $SIG{PIPE} = 'IGNORE';
    my $open = 0;
    for (;;) {
        $open-- while $open > 0 && waitpid(-1, POSIX::WNOHANG()) > 0;
        if ($open >= CONNS_MAX) {
            $open-- if waitpid(-1, 0) > 0;
            next;
        }
        my $tcp;
        if (!accept($tcp, $listener)) {
            select(undef, undef, undef, ACCEPT_REST) if $! != EINTR && $! != ECONNABORTED;
            next;
        }
        my $kid = fork();
        if (defined $kid && $kid == 0) {
            close($listener);
            relay_blocking($tcp);
            POSIX::_exit(0);
        }
        $open++ if defined $kid;
        close($tcp);    # the child's now; dropped when no child could be made
    }
}

# The relay is a grandchild in a session of its own: not a child the
# program might wait for, nor in its process group.
{
    local $SIG{CHLD} = 'DEFAULT';
    my $pid = fork();
    defined $pid or fail("fork: $!");
    if ($pid == 0) {
        POSIX::setsid();
        (open(STDIN, '<', '/dev/null') && open(STDOUT, '>', '/dev/null')
              && open(STDERR, '>', '/dev/null'))
          or POSIX::_exit(1);
        my $relay = fork();
        POSIX::_exit(defined $relay ? 0 : 1) if !defined $relay || $relay > 0;
        $blocking ? serve_blocking() : serve();
        POSIX::_exit(0);
    }
    (waitpid($pid, 0) == $pid && $? == 0) or fail("cannot start the relay");
}
close($listener);
exec { $ARGV[0] } @ARGV;
die "mcpsbx egress forwarder: cannot run $ARGV[0]: $!\n";
