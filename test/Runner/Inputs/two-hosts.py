"""Runs an MPI program on two "hosts" made on this machine: two network
namespaces with their own host names, joined by a bridge, between which MPI
can only use TCP. mpirun starts a daemon in each through a remote-shell
agent that enters the namespace (instead of ssh). Everything is removed
afterwards.

usage: two-hosts.py <mpirun command> -- <program> [args...]

Prints each rank's host, then runs the program with -np 2, one rank per
host, and exits with its status. Needs root (CAP_NET_ADMIN), ip and unshare.
"""

import os
import subprocess
import sys
import tempfile

split = sys.argv.index("--")
mpirun = sys.argv[1:split]
program = sys.argv[split + 1:]
tag = "%05d" % (os.getpid() % 100000)
subnet = "10.%d.%d" % (64 + os.getpid() % 64, os.getpid() % 250)
bridge = "mpb" + tag
hosts = [("mp%sa" % tag, subnet + ".1"), ("mp%sb" % tag, subnet + ".2")]


def sh(*command):
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)


def teardown():
    for ns, _ in hosts:
        subprocess.run(["ip", "netns", "del", ns], stderr=subprocess.DEVNULL)
    subprocess.run(["ip", "link", "del", bridge], stderr=subprocess.DEVNULL)


status = 1
with tempfile.TemporaryDirectory() as tmp:
    try:
        sh("ip", "link", "add", bridge, "type", "bridge")
        sh("ip", "addr", "add", subnet + ".254/24", "dev", bridge)
        sh("ip", "link", "set", bridge, "up")
        for k, (ns, address) in enumerate(hosts):
            veth = "mpv%s%d" % (tag, k)
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", veth, "type", "veth", "peer", "name",
               "eth0", "netns", ns)
            sh("ip", "link", "set", veth, "master", bridge)
            sh("ip", "link", "set", veth, "up")
            sh("ip", "netns", "exec", ns, "ip", "addr", "add",
               address + "/24", "dev", "eth0")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up")
            sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")
        agent = os.path.join(tmp, "agent.sh")
        with open(agent, "w") as f:
            f.write('#!/bin/sh\nhost="$1"; shift\ncase "$host" in\n')
            for ns, address in hosts:
                f.write("  %s) ns=%s ;;\n" % (address, ns))
            f.write('  *) echo "agent: unknown host $host" >&2; exit 1 ;;\n'
                    'esac\nexec ip netns exec "$ns" unshare --uts /bin/sh -c '
                    '"hostname $ns && $*"\n')
        os.chmod(agent, 0o755)
        launch = mpirun + [
            "--host", ",".join(a for _, a in hosts), "-np", "2",
            "--mca", "plm_rsh_agent", agent,
            "--mca", "btl", "tcp,self",
            "--mca", "btl_tcp_if_include", subnet + ".0/24",
            "--mca", "oob_tcp_if_include", subnet + ".0/24"]
        # Which rank runs where; also proves the network carries mpirun's
        # daemons before the program starts (a bridge just made may drop
        # the first connection: up to 3 tries).
        for attempt in range(3):
            where = subprocess.run(
                launch + ["sh", "-c",
                          'echo "rank $OMPI_COMM_WORLD_RANK on $(hostname)"'],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                timeout=120)
            if where.returncode == 0:
                break
        if where.returncode:
            print(where.stdout)
            sys.exit(1)
        for line in sorted(where.stdout.splitlines()):
            print(line.replace(tag, "<id>"))
        sys.stdout.flush()
        status = subprocess.run(launch + program, timeout=600).returncode
    finally:
        teardown()
sys.exit(status)
