# mcp-sandboxd egress forwarder (protocol: src/backend/docker/egress_sock.h).
# Started as `perl -e <this file> SOCKET PORT PROGRAM ARGS...` in a sandbox
# that has no network: listens on 127.0.0.1:PORT, leaves a detached relay
# that passes every TCP connection made there to the daemon's unix socket
# SOCKET (the egress gateway, an HTTP proxy), and executes PROGRAM in its
# own place with its standard streams untouched. Fails closed: when it
# cannot listen, PROGRAM never runs. The relay holds none of the program's
# standard streams (its own are /dev/null), so the program's output ends
# when the program does. perl-base only: Socket, POSIX, Errno, Fcntl.
use strict;
use warnings;
use Socket qw(PF_INET PF_UNIX SOCK_STREAM SOL_SOCKET SO_REUSEADDR SOMAXCONN INADDR_LOOPBACK
  SHUT_WR pack_sockaddr_in pack_sockaddr_un);
use POSIX ();
use Errno qw(EINTR EAGAIN);
use Fcntl qw(F_GETFL F_SETFL O_NONBLOCK);

# What a connection holds per direction, read but not yet written.
use constant BUF_MAX => 65536;

sub fail { die "mcpsbx egress forwarder: $_[0]\n" }

my ($path, $port) = splice(@ARGV, 0, 2);
defined $port && $port =~ /\A[0-9]{1,5}\z/ && $port > 0 && $port < 65536 && @ARGV
  or fail("usage: SOCKET PORT PROGRAM ARGS...");

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

# One connection both ways until both ends are done: what one side sends
# is written to the other as it can take it, and its end (a half-close)
# passed on with shutdown. Any error ends both.
sub relay {
    my ($tcp) = @_;
    socket(my $unix, PF_UNIX, SOCK_STREAM, 0) or return;
    connect($unix, pack_sockaddr_un($path)) or return;
    my @s = ($tcp, $unix);
    nonblocking($_) or return for @s;
    my @buf = ('', '');    # $buf[$i]: read from $s[$i], for $s[1 - $i]
    my @eof = (0, 0);
    my @shut = (0, 0);     # $s[1 - $i] was told that $s[$i] ended
    until ($shut[0] && $shut[1]) {
        my ($rin, $win) = ('', '');
        for my $i (0, 1) {
            vec($rin, fileno($s[$i]), 1) = 1 if !$eof[$i] && length($buf[$i]) < BUF_MAX;
            vec($win, fileno($s[1 - $i]), 1) = 1 if length($buf[$i]);
        }
        my ($rout, $wout) = ($rin, $win);
        if (select($rout, $wout, undef, undef) < 0) {
            next if $! == EINTR;
            return;
        }
        for my $i (0, 1) {
            my ($from, $to) = ($s[$i], $s[1 - $i]);
            if (vec($rout, fileno($from), 1)) {
                my $n = sysread($from, $buf[$i], BUF_MAX - length($buf[$i]), length($buf[$i]));
                if (!defined $n) {
                    return if $! != EINTR && $! != EAGAIN;
                } elsif ($n == 0) {
                    $eof[$i] = 1;
                }
            }
            if (length($buf[$i]) && vec($wout, fileno($to), 1)) {
                my $n = syswrite($to, $buf[$i]);
                if (!defined $n) {
                    return if $! != EINTR && $! != EAGAIN;
                } else {
                    substr($buf[$i], 0, $n, '');
                }
            }
            if ($eof[$i] && !length($buf[$i]) && !$shut[$i]) {
                shutdown($to, SHUT_WR);
                $shut[$i] = 1;
            }
        }
    }
}

# Accepts for as long as the sandbox lives; a process per connection,
# reaped by the kernel.
sub serve {
    local $SIG{CHLD} = 'IGNORE';
    local $SIG{PIPE} = 'IGNORE';
    for (;;) {
        my $conn;
        if (!accept($conn, $listener)) {
            # Out of descriptors or memory: wait rather than spin.
            select(undef, undef, undef, 0.1) if $! != EINTR;
            next;
        }
        my $kid = fork();
        if (defined $kid && $kid == 0) {
            close($listener);
            relay($conn);
            POSIX::_exit(0);
        }
        close($conn);    # the child's now; dropped when no child could be made
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
        serve();
        POSIX::_exit(0);
    }
    (waitpid($pid, 0) == $pid && $? == 0) or fail("cannot start the relay");
}
close($listener);
exec { $ARGV[0] } @ARGV;
die "mcpsbx egress forwarder: cannot run $ARGV[0]: $!\n";
