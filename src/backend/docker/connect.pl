# mcp-sandboxd sandbox I/O connector (protocol: src/backend/docker/channel.h).
# Started as `perl -e <this file> SOCKET PROGRAM ARGS...`: connects twice
# to the daemon's unix socket SOCKET (tagged "o" for stdin and stdout,
# then "e" for stderr), makes the connections file descriptors 0, 1 and 2,
# and executes PROGRAM in its place. perl-base is in every Debian image;
# Socket and POSIX come with it. Nothing here outlives the exec: the
# connections are the program's standard streams and nothing else.
use strict;
use warnings;
use Socket qw(PF_UNIX SOCK_STREAM pack_sockaddr_un);
use POSIX ();

my $path = shift @ARGV;
defined $path && @ARGV or die "mcpsbx connector: usage: SOCKET PROGRAM ARGS...\n";

sub connect_tagged {
    my ($tag) = @_;
    socket(my $s, PF_UNIX, SOCK_STREAM, 0) or die "mcpsbx connector: socket: $!\n";
    connect($s, pack_sockaddr_un($path)) or die "mcpsbx connector: connect $path: $!\n";
    defined(syswrite($s, $tag)) or die "mcpsbx connector: write: $!\n";
    return $s;
}

my $io = connect_tagged("o");
my $err = connect_tagged("e");
# dup2 leaves the new descriptors open across exec; the originals are
# close-on-exec (perl sets that above $^F).
defined(POSIX::dup2(fileno($io), 0)) or die "mcpsbx connector: dup2: $!\n";
defined(POSIX::dup2(fileno($io), 1)) or die "mcpsbx connector: dup2: $!\n";
defined(POSIX::dup2(fileno($err), 2)) or die "mcpsbx connector: dup2: $!\n";
exec { $ARGV[0] } @ARGV;
die "mcpsbx connector: cannot run $ARGV[0]: $!\n";
