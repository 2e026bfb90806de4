# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_redlock_global_optspecs
    string join \n h/help V/version
end

function __fish_redlock_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_redlock_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_redlock_using_subcommand
    set -l cmd (__fish_redlock_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c redlock -n "__fish_redlock_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c redlock -n "__fish_redlock_needs_command" -s V -l version -d 'Print version'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "run" -d 'Run a command while holding a lock (same as redlock-run)'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "status" -d 'Show whether locks are held, and by whom'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "list" -d 'List the held locks under the prefix'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "release" -d 'Release a lock: with --token only that holder\'s, with --force whoever holds it'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "acquire" -d 'Take a lock and print its token (for scripts that cannot wrap one command)'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "extend" -d 'Extend a lock held with a token'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "wait" -d 'Wait until a lock is free, without taking it'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "history" -d 'Show a lock\'s last runs (recorded by redlock-run), newest first'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "forget" -d 'Delete a free lock\'s run history, fence counter and --order-key mark now, instead of --retain after its last use (refused while the lock is held or waited for)'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "doctor" -d 'Check the Redis a lock depends on: eviction, replica role, persistence, ACL, clock offset, latency against the ttl'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "top" -d 'A live view of the locks under the prefix: holders, waiters, slots, last runs'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "preempt" -d 'Ask a lock\'s holder, wherever it runs, to stop gracefully (its command gets --preempt-signal, SIGKILL after its --kill-after; it releases and exits 80)'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "leader" -d 'Who leads an --elect name: host, pid, term (its fencing number), since, its --announce value; --watch prints a line per change, --is-me answers with the exit status (a readiness probe)'
complete -c redlock -n "__fish_redlock_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c redlock -n "__fish_redlock_using_subcommand run" -s k -l key -d 'Name of the lock (any non-empty string). Give it several times to hold several names at once (up to 16): the command runs only while the run holds every one, and a run that cannot have them all holds none while it waits' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l redis -d 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l redis-url-file -d 'Read the Redis URL(s) from this file, one per line (for secrets)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand run" -l prefix -d 'Namespace prefix of every key (no braces) [default: redlock:]' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l node-timeout -d 'Timeout of each request to a Redis node, 1ms to 365 days [default: ttl/15, at most 2s; a holder on a Cluster or through Sentinel ttl/20, at most 2s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l tls-ca -d 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand run" -l tls-cert -d 'Client certificate, PEM, for mutual TLS (with --tls-key)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand run" -l tls-key -d 'Client private key, PEM, for mutual TLS (with --tls-cert)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand run" -l ttl -d 'Lease time, renewed while the command runs; 100ms to 365 days (e.g. 30s, 2m) [default: 30s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -s w -l wait -d 'How long to wait for a busy lock or an unreachable Redis: 0 tries once, up to 365 days, or "forever" [default: 0; with --once-id: forever]' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -s E -l busy-exit-code -d 'Exit status when the lock is busy (0-255; with 0, busy and waiting are not reported off a terminal) [default: 75]' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l renew-every -d 'Renewal interval, 1ms up to below the ttl [default: ttl/3]' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l kill-after -d 'Grace between SIGTERM and SIGKILL when the command must stop, 0 to 365 days (it must fit in the ttl) [default: ttl/6, at most 5s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l on-lost -d 'What to do when the lock is lost while the command runs' -r -f -a "kill\t'SIGTERM the command\'s process group, SIGKILL after --kill-after; exit 79'
keep\t'Warn on stderr and let the command finish without the lock; exit 79'"
complete -c redlock -n "__fish_redlock_using_subcommand run" -l hold-min -d 'Keep the lock this long after the start even if the command ends sooner (cron de-duplication across hosts whose clocks differ), up to 365 days' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l max-hold -d 'Never hold the lock longer than this (1ms to 365 days): renewals stop and the command is stopped as for a lost lock (see --on-lost), exit 124' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l events -d 'Write lifecycle events as JSON lines to this file (appended), or "-" for stderr' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand run" -l metrics -d 'Write the run\'s outcome in the Prometheus text format to this file (replaced whole, at the start and the end of the run), for node_exporter\'s textfile collector; one file per lock name' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand run" -l once-per -d 'Run once per slot of this period across all hosts: a length (1s to 365 days in ms, s, m, h, d, e.g. 1m, 1h, 1d: the slot is the Redis server\'s time rounded down to a multiple of it from the Unix epoch, UTC; weeks, months and years are refused: give week or month with --tz), or a calendar period, day, week or month, in --tz\'s zone (a day from local midnight, 23 or 25 hours across DST; an ISO week from Monday; a month from the 1st), taken from the Redis server\'s time whatever the host clocks say. A try whose slot already had a run exiting 0, or whose slot\'s run is in progress, is skipped: busy exit status, silent (said with --verbose); a failed run leaves the slot open for the next try' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l tz -d 'With --once-per day, week or month: the time zone of the slots, an IANA name (Europe/Berlin, America/New_York; default UTC), from the system\'s zoneinfo or the database built in (localtime, posixrules, posix/..., right/... and paths are refused). Every host of the job must give the same zone' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l if-vanished -d 'With --once-per: what a slot does when its run vanished (started, then its host or wrapper died, so its end was never recorded). skip: the slot stays closed (it may have succeeded; at most once). rerun: the slot is open again and the next try on any host runs it (a waiting host as soon as the vanished run\'s lease ends), up to --max-attempts starts per slot' -r -f -a "skip\t'It may have succeeded: the slot stays closed (at most once)'
rerun\t'The slot is open again: the next try on any host runs it (at least once, up to `--max-attempts` starts)'"
complete -c redlock -n "__fish_redlock_using_subcommand run" -l once-id -d 'Run once per ID (e.g. a release tag), across hosts and time: the first run for this name and ID runs the command; runs of the same ID that come meanwhile wait for it (--wait defaults to forever); when it exits 0 they exit 0 without running (one line says who ran it), when it fails one of them runs it (up to --max-attempts, 3); any later run of the ID exits 0 at once. The record is kept --retain. Not with --once-per or --limit' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l splay -d 'With --once-per: spread a fleet\'s tries over the first D of each slot (D shorter than the period). The try first fixes its slot from the Redis server\'s time, then waits an offset in [0, D) drawn from this host, the name and the slot (different hosts spread; each slot draws again, so the host that runs the job rotates), then tries for that slot only: it never runs on behalf of the next one. The run starts up to D later' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l max-attempts -d 'With --once-per: the most runs that may start in one slot (failed and vanished ones count, in the run history: --history must keep at least N); the next try is skipped with the reason attempts_exhausted. Default: 3 with --if-vanished rerun, no limit otherwise' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l limit -d 'Let up to N runs hold the lock at once (a semaphore, 1 to 100): each holds one slot (REDLOCK_SLOT) with its own token, renewals and lost-lock detection. Every run on the name must give the same N. One server, Cluster or Sentinel. With several --key names, say which: --limit NAME=N (that name is a pool of N)' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l shared -d 'Hold the name in shared mode: any number of --shared runs hold it at once, and a run without --shared takes it exclusively, never beside any holder. Writers go first: once an exclusive run waits, new shared runs wait behind it. Each shared holder has its own token, lease and fence. One server, Cluster or Sentinel. With several --key names, say which: --shared NAME' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l supersede -d 'The newest run wins (CI): when this run starts waiting, every older run waiting on the name exits 73 without running (superseded). running: the holder is also asked to stop (it gets --preempt-signal, SIGKILL after its --kill-after, releases and exits 80) and this run starts after its release. Needs --wait; every run on the name must give --supersede (with --order-key, all of them). One server, Cluster or Sentinel' -r -f -a "waiting\t'Every older waiting run exits without running (superseded); the holder runs on'
running\t'Also, the holder is asked to stop (preempted): its command gets `--preempt-signal`, then SIGKILL after `--kill-after`, and the lock is released'"
complete -c redlock -n "__fish_redlock_using_subcommand run" -l order-key -d 'With --supersede: "newest" is the largest N (a pipeline or run number that a retry keeps, or the commit time; not Jenkins\' or buildbot\'s BUILD_NUMBER, new for a rebuild; 0 to 2^53-1), not the latest arrival; a run whose N is lower than one that already started on the name exits 73 without running (outdated)' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l preempt-signal -d 'The signal the command gets when a newer run preempts it (TERM, INT, HUP, USR1, ...) [default: TERM]; SIGKILL follows after --kill-after' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l on-exit -d 'With --elect: what the leader does when its command exits by itself. resign: release, back off 2 renewal intervals, contend again; restart: run it again, keeping the lock, after a back-off of 1s doubling to 60s; exit: release and exit with its status [default: resign]' -r -f -a "resign\t'Release the lock, back off a little (so that a flapping host yields to a standby) and contend again'
restart\t'Run the command again, keeping the lock, after a back-off that grows from 1s to 60s while it keeps exiting'
exit\t'Release the lock and exit with the command\'s status'"
complete -c redlock -n "__fish_redlock_using_subcommand run" -l elect-max-terms -d 'With --elect: exit after N terms (1 to 1000000), with the last term\'s status' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l announce -d 'A value recorded beside the holder (up to 256 characters; e.g. the leader\'s address), shown by `redlock leader` and `redlock status`' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l ready-file -d 'Create this file (atomically, holding the fencing number) when the command starts under the lock, and remove it before the command is stopped or when it ends: a readiness probe that says "this copy leads"' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand run" -l retain -d 'How long the name\'s fence counter and run history are kept after its last use (1s to 365 days), refreshed by every acquisition and release; a name unused that long leaves nothing in Redis. With --once-per, at least twice the period [default: 30d]' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l history -d 'How many past runs the lock\'s history keeps (`redlock history`, `redlock status`), 0 to 1000; 0 records nothing; with --once-per, at least --max-attempts [default: 20]' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l label -d 'Record TEXT in the holder metadata and the history instead of the command line (for a command whose arguments carry secrets the masking does not know); wins over --hide-args' -r
complete -c redlock -n "__fish_redlock_using_subcommand run" -l local-dir -d 'Directory of the host-local queue: runs that wait queue here first, and only the first of each host contends in Redis; share one between users to queue them together. The host also keeps here what it learned of its servers (each one\'s run ID, for the lock-delay; a Cluster\'s slot map; a Sentinel master\'s address) [env: REDLOCK_LOCAL_DIR] [default: $XDG_RUNTIME_DIR/redlock, else /tmp/redlock-UID]' -r -f -a "(__fish_complete_directories)"
complete -c redlock -n "__fish_redlock_using_subcommand run" -l tls-insecure-skip-verify -d 'Do not verify the server\'s TLS certificate or name (tests only; warns every run)'
complete -c redlock -n "__fish_redlock_using_subcommand run" -l fair -d 'Wait in a first-come, first-served queue: the lock goes to the longest waiter, and the waiting line says your place ("you are #2 of 4"). Every run on the name must give --fair. One server, Cluster or Sentinel'
complete -c redlock -n "__fish_redlock_using_subcommand run" -l uninterruptible -d 'Refuse to be preempted (--supersede running, redlock preempt): a newer run waits for this one to end instead'
complete -c redlock -n "__fish_redlock_using_subcommand run" -l elect -d 'Hot standby: wait for the lock for as long as this runs, run the command while holding it, and when the lock is lost (the command is stopped as for any lost lock) contend again instead of exiting 79. Each term has a new fencing number. Exits on SIGTERM/SIGINT (the command is stopped, the lock released and the next standby woken), on a usage or auth error, or after --elect-max-terms. Not with --once-per, --once-id, --limit, --supersede, --hold-min, --wait'
complete -c redlock -n "__fish_redlock_using_subcommand run" -l hide-args -d 'Record only the program name in the holder metadata, not its arguments'
complete -c redlock -n "__fish_redlock_using_subcommand run" -l no-local-queue -d 'Wait in Redis directly, without the host-local queue (every waiting run holds a Redis connection) [env: REDLOCK_NO_LOCAL_QUEUE=1|0, true|false, yes|no, on|off]. A flag on the command line wins over both variables; from the same place, this wins over the directory'
complete -c redlock -n "__fish_redlock_using_subcommand run" -s q -l quiet -d 'Print nothing but errors (no waiting line, no busy note); a vanished run\'s one line (told once in the fleet) is still printed'
complete -c redlock -n "__fish_redlock_using_subcommand run" -s v -l verbose -d 'Say what happens: connect retries, acquire, renewals, release'
complete -c redlock -n "__fish_redlock_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c redlock -n "__fish_redlock_using_subcommand status" -l redis -d 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand status" -l redis-url-file -d 'Read the Redis URL(s) from this file, one per line (for secrets)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand status" -l prefix -d 'Namespace prefix of every key (no braces) [default: redlock:]' -r
complete -c redlock -n "__fish_redlock_using_subcommand status" -l tls-ca -d 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand status" -l tls-cert -d 'Client certificate, PEM, for mutual TLS (with --tls-key)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand status" -l tls-key -d 'Client private key, PEM, for mutual TLS (with --tls-cert)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand status" -l local-dir -d 'Directory of the host-local queue whose waiters to count, as the runs were given it [default: $XDG_RUNTIME_DIR/redlock, else /tmp/redlock-UID]' -r -f -a "(__fish_complete_directories)"
complete -c redlock -n "__fish_redlock_using_subcommand status" -l node-timeout -d 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand status" -l tls-insecure-skip-verify -d 'Do not verify the server\'s TLS certificate or name (tests only; warns every run)'
complete -c redlock -n "__fish_redlock_using_subcommand status" -l json -d 'Print JSON (one object per line)'
complete -c redlock -n "__fish_redlock_using_subcommand status" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c redlock -n "__fish_redlock_using_subcommand list" -l redis -d 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand list" -l redis-url-file -d 'Read the Redis URL(s) from this file, one per line (for secrets)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand list" -l prefix -d 'Namespace prefix of every key (no braces) [default: redlock:]' -r
complete -c redlock -n "__fish_redlock_using_subcommand list" -l tls-ca -d 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand list" -l tls-cert -d 'Client certificate, PEM, for mutual TLS (with --tls-key)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand list" -l tls-key -d 'Client private key, PEM, for mutual TLS (with --tls-cert)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand list" -l node-timeout -d 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand list" -l tls-insecure-skip-verify -d 'Do not verify the server\'s TLS certificate or name (tests only; warns every run)'
complete -c redlock -n "__fish_redlock_using_subcommand list" -l json -d 'Print JSON (one object per line)'
complete -c redlock -n "__fish_redlock_using_subcommand list" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c redlock -n "__fish_redlock_using_subcommand release" -l token -d 'Release only if this token holds the lock' -r
complete -c redlock -n "__fish_redlock_using_subcommand release" -l slot -d 'The slot of a semaphore (--limit) to release, 1 to N [default: --token: the slot the token holds; --if-dead: every slot; --force asks for it]' -r
complete -c redlock -n "__fish_redlock_using_subcommand release" -l redis -d 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand release" -l redis-url-file -d 'Read the Redis URL(s) from this file, one per line (for secrets)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand release" -l prefix -d 'Namespace prefix of every key (no braces) [default: redlock:]' -r
complete -c redlock -n "__fish_redlock_using_subcommand release" -l tls-ca -d 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand release" -l tls-cert -d 'Client certificate, PEM, for mutual TLS (with --tls-key)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand release" -l tls-key -d 'Client private key, PEM, for mutual TLS (with --tls-cert)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand release" -l node-timeout -d 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand release" -l force -d 'Remove the lock whoever holds it (says whose lock it was)'
complete -c redlock -n "__fish_redlock_using_subcommand release" -l if-dead -d 'Remove the lock only on proof that its holder is gone: its process recorded exactly (not `acquire`\'s guess), on this machine (host name and boot id), in this PID namespace, and gone (no such process, a zombie, or a reused pid). Anything else, a --hold-min keep included, is a refusal (exit 75). On a semaphore without --slot, every slot whose holder is proved gone'
complete -c redlock -n "__fish_redlock_using_subcommand release" -l tls-insecure-skip-verify -d 'Do not verify the server\'s TLS certificate or name (tests only; warns every run)'
complete -c redlock -n "__fish_redlock_using_subcommand release" -l json -d 'Print JSON'
complete -c redlock -n "__fish_redlock_using_subcommand release" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l ttl -d 'Lease time; the lock expires unless extended (e.g. 5m), 100ms to 365 days [default: 30s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -s w -l wait -d 'How long to wait for a busy lock or an unreachable Redis: 0 tries once, up to 365 days, or "forever" [default: 0; with --once-id: forever]' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -s E -l busy-exit-code -d 'Exit status when the lock is busy (0-255; with 0, busy and waiting are not reported off a terminal) [default: 75]' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l retain -d 'How long the name\'s fence counter and run history are kept after its last use (1s to 365 days), refreshed by every acquisition and release; a name unused that long leaves nothing in Redis. With --once-per, at least twice the period [default: 30d]' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l holder-pid -d 'The process the lock belongs to (e.g. `$$`, the calling script): with it, `redlock release --if-dead` removes the lock once that process is gone; without it, the caller shown is a guess from the process tree and --if-dead refuses' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l redis -d 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l redis-url-file -d 'Read the Redis URL(s) from this file, one per line (for secrets)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l prefix -d 'Namespace prefix of every key (no braces) [default: redlock:]' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l node-timeout -d 'Timeout of each request to a Redis node, 1ms to 365 days [default: ttl/15, at most 2s; a holder on a Cluster or through Sentinel ttl/20, at most 2s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l tls-ca -d 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l tls-cert -d 'Client certificate, PEM, for mutual TLS (with --tls-key)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l tls-key -d 'Client private key, PEM, for mutual TLS (with --tls-cert)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l shared -d 'Take a share of the name (see `redlock-run --shared`): release it with `redlock release NAME --token T`, renew it with `redlock extend`'
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l tls-insecure-skip-verify -d 'Do not verify the server\'s TLS certificate or name (tests only; warns every run)'
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -l json -d 'Print JSON (token, key, ttl_ms)'
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -s q -l quiet -d 'No progress note while waiting'
complete -c redlock -n "__fish_redlock_using_subcommand acquire" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l token -d 'The token printed by `redlock acquire`' -r
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l ttl -d 'New time to live from now [default: 30s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l redis -d 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l redis-url-file -d 'Read the Redis URL(s) from this file, one per line (for secrets)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l prefix -d 'Namespace prefix of every key (no braces) [default: redlock:]' -r
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l node-timeout -d 'Timeout of each request to a Redis node, 1ms to 365 days [default: ttl/15, at most 2s; a holder on a Cluster or through Sentinel ttl/20, at most 2s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l tls-ca -d 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l tls-cert -d 'Client certificate, PEM, for mutual TLS (with --tls-key)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l tls-key -d 'Client private key, PEM, for mutual TLS (with --tls-cert)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l tls-insecure-skip-verify -d 'Do not verify the server\'s TLS certificate or name (tests only; warns every run)'
complete -c redlock -n "__fish_redlock_using_subcommand extend" -l json -d 'Print JSON (name, key, token, ttl_ms) when extended'
complete -c redlock -n "__fish_redlock_using_subcommand extend" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c redlock -n "__fish_redlock_using_subcommand wait" -s t -l timeout -d 'Give up after this long (up to 365 days, or "forever") [default: forever]' -r
complete -c redlock -n "__fish_redlock_using_subcommand wait" -l redis -d 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand wait" -l redis-url-file -d 'Read the Redis URL(s) from this file, one per line (for secrets)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand wait" -l prefix -d 'Namespace prefix of every key (no braces) [default: redlock:]' -r
complete -c redlock -n "__fish_redlock_using_subcommand wait" -l tls-ca -d 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand wait" -l tls-cert -d 'Client certificate, PEM, for mutual TLS (with --tls-key)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand wait" -l tls-key -d 'Client private key, PEM, for mutual TLS (with --tls-cert)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand wait" -l node-timeout -d 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand wait" -l tls-insecure-skip-verify -d 'Do not verify the server\'s TLS certificate or name (tests only; warns every run)'
complete -c redlock -n "__fish_redlock_using_subcommand wait" -s q -l quiet -d 'Print nothing but errors'
complete -c redlock -n "__fish_redlock_using_subcommand wait" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c redlock -n "__fish_redlock_using_subcommand history" -s n -l limit -d 'Show at most this many runs [default: all that are kept]' -r
complete -c redlock -n "__fish_redlock_using_subcommand history" -l redis -d 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand history" -l redis-url-file -d 'Read the Redis URL(s) from this file, one per line (for secrets)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand history" -l prefix -d 'Namespace prefix of every key (no braces) [default: redlock:]' -r
complete -c redlock -n "__fish_redlock_using_subcommand history" -l tls-ca -d 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand history" -l tls-cert -d 'Client certificate, PEM, for mutual TLS (with --tls-key)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand history" -l tls-key -d 'Client private key, PEM, for mutual TLS (with --tls-cert)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand history" -l since -d 'With --timeline: how far back to draw, 1m to 365 days [default: from the oldest run shown to now, at a round column width]' -r
complete -c redlock -n "__fish_redlock_using_subcommand history" -l node-timeout -d 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand history" -l tls-insecure-skip-verify -d 'Do not verify the server\'s TLS certificate or name (tests only; warns every run)'
complete -c redlock -n "__fish_redlock_using_subcommand history" -l json -d 'Print JSON (one object: the name and its runs)'
complete -c redlock -n "__fish_redlock_using_subcommand history" -l timeline -d 'Draw the runs: one row per host, time across (UTC), each run a bar shaded by how it ended; NAME may be a pattern (nightly-*) [colours on a terminal, NO_COLOR honoured; the width of the terminal, else $COLUMNS, else 80]'
complete -c redlock -n "__fish_redlock_using_subcommand history" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c redlock -n "__fish_redlock_using_subcommand forget" -l redis -d 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand forget" -l redis-url-file -d 'Read the Redis URL(s) from this file, one per line (for secrets)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand forget" -l prefix -d 'Namespace prefix of every key (no braces) [default: redlock:]' -r
complete -c redlock -n "__fish_redlock_using_subcommand forget" -l tls-ca -d 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand forget" -l tls-cert -d 'Client certificate, PEM, for mutual TLS (with --tls-key)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand forget" -l tls-key -d 'Client private key, PEM, for mutual TLS (with --tls-cert)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand forget" -l node-timeout -d 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand forget" -l tls-insecure-skip-verify -d 'Do not verify the server\'s TLS certificate or name (tests only; warns every run)'
complete -c redlock -n "__fish_redlock_using_subcommand forget" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -s k -l key -d 'Lock name whose keys are checked (ACL key patterns, Cluster slot) [default: doctor]' -r
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l ttl -d 'The ttl the latency is judged against, 100ms to 365 days [default: 30s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l redis -d 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l redis-url-file -d 'Read the Redis URL(s) from this file, one per line (for secrets)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l prefix -d 'Namespace prefix of every key (no braces) [default: redlock:]' -r
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l node-timeout -d 'Timeout of each request to a Redis node, 1ms to 365 days [default: ttl/15, at most 2s; a holder on a Cluster or through Sentinel ttl/20, at most 2s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l tls-ca -d 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l tls-cert -d 'Client certificate, PEM, for mutual TLS (with --tls-key)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l tls-key -d 'Client private key, PEM, for mutual TLS (with --tls-cert)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l tls-insecure-skip-verify -d 'Do not verify the server\'s TLS certificate or name (tests only; warns every run)'
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -l json -d 'Print one JSON object (nodes, findings, worst, counts, exit)'
complete -c redlock -n "__fish_redlock_using_subcommand doctor" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c redlock -n "__fish_redlock_using_subcommand top" -l redis -d 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand top" -l redis-url-file -d 'Read the Redis URL(s) from this file, one per line (for secrets)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand top" -l prefix -d 'Namespace prefix of every key (no braces) [default: redlock:]' -r
complete -c redlock -n "__fish_redlock_using_subcommand top" -l tls-ca -d 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand top" -l tls-cert -d 'Client certificate, PEM, for mutual TLS (with --tls-key)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand top" -l tls-key -d 'Client private key, PEM, for mutual TLS (with --tls-cert)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand top" -s n -l interval -d 'Refresh every DURATION, 100ms to 1h [default: 1s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand top" -l node-timeout -d 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand top" -l tls-insecure-skip-verify -d 'Do not verify the server\'s TLS certificate or name (tests only; warns every run)'
complete -c redlock -n "__fish_redlock_using_subcommand top" -l once -d 'Print one frame as text and exit (for scripts; no terminal needed)'
complete -c redlock -n "__fish_redlock_using_subcommand top" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c redlock -n "__fish_redlock_using_subcommand preempt" -l signal -d 'The signal the command gets (TERM, INT, HUP, ...) [default: the holder\'s --preempt-signal]' -r
complete -c redlock -n "__fish_redlock_using_subcommand preempt" -l wait -d 'Wait until the holder has stopped and released, at most DURATION (1ms to 365 days); 75 when it still holds the lock then' -r
complete -c redlock -n "__fish_redlock_using_subcommand preempt" -l redis -d 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand preempt" -l redis-url-file -d 'Read the Redis URL(s) from this file, one per line (for secrets)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand preempt" -l prefix -d 'Namespace prefix of every key (no braces) [default: redlock:]' -r
complete -c redlock -n "__fish_redlock_using_subcommand preempt" -l tls-ca -d 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand preempt" -l tls-cert -d 'Client certificate, PEM, for mutual TLS (with --tls-key)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand preempt" -l tls-key -d 'Client private key, PEM, for mutual TLS (with --tls-cert)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand preempt" -l node-timeout -d 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand preempt" -l tls-insecure-skip-verify -d 'Do not verify the server\'s TLS certificate or name (tests only; warns every run)'
complete -c redlock -n "__fish_redlock_using_subcommand preempt" -l json -d 'Print JSON'
complete -c redlock -n "__fish_redlock_using_subcommand preempt" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c redlock -n "__fish_redlock_using_subcommand leader" -l redis -d 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters' -r
complete -c redlock -n "__fish_redlock_using_subcommand leader" -l redis-url-file -d 'Read the Redis URL(s) from this file, one per line (for secrets)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand leader" -l prefix -d 'Namespace prefix of every key (no braces) [default: redlock:]' -r
complete -c redlock -n "__fish_redlock_using_subcommand leader" -l tls-ca -d 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand leader" -l tls-cert -d 'Client certificate, PEM, for mutual TLS (with --tls-key)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand leader" -l tls-key -d 'Client private key, PEM, for mutual TLS (with --tls-cert)' -r -F
complete -c redlock -n "__fish_redlock_using_subcommand leader" -l node-timeout -d 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]' -r
complete -c redlock -n "__fish_redlock_using_subcommand leader" -l watch -d 'Print a line (with --json, a JSON line) now and at every change of leader, until interrupted; changes are seen within 250ms'
complete -c redlock -n "__fish_redlock_using_subcommand leader" -l is-me -d 'Exit 0 when this host leads, 1 when another does or none does (69 when Redis cannot be reached): a readiness probe. The host is REDLOCK_HOST when set, else the machine\'s name, as the runs record it'
complete -c redlock -n "__fish_redlock_using_subcommand leader" -l tls-insecure-skip-verify -d 'Do not verify the server\'s TLS certificate or name (tests only; warns every run)'
complete -c redlock -n "__fish_redlock_using_subcommand leader" -l json -d 'Print JSON'
complete -c redlock -n "__fish_redlock_using_subcommand leader" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from run status list release acquire extend wait history forget doctor top preempt leader help" -f -a "run" -d 'Run a command while holding a lock (same as redlock-run)'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from run status list release acquire extend wait history forget doctor top preempt leader help" -f -a "status" -d 'Show whether locks are held, and by whom'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from run status list release acquire extend wait history forget doctor top preempt leader help" -f -a "list" -d 'List the held locks under the prefix'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from run status list release acquire extend wait history forget doctor top preempt leader help" -f -a "release" -d 'Release a lock: with --token only that holder\'s, with --force whoever holds it'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from run status list release acquire extend wait history forget doctor top preempt leader help" -f -a "acquire" -d 'Take a lock and print its token (for scripts that cannot wrap one command)'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from run status list release acquire extend wait history forget doctor top preempt leader help" -f -a "extend" -d 'Extend a lock held with a token'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from run status list release acquire extend wait history forget doctor top preempt leader help" -f -a "wait" -d 'Wait until a lock is free, without taking it'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from run status list release acquire extend wait history forget doctor top preempt leader help" -f -a "history" -d 'Show a lock\'s last runs (recorded by redlock-run), newest first'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from run status list release acquire extend wait history forget doctor top preempt leader help" -f -a "forget" -d 'Delete a free lock\'s run history, fence counter and --order-key mark now, instead of --retain after its last use (refused while the lock is held or waited for)'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from run status list release acquire extend wait history forget doctor top preempt leader help" -f -a "doctor" -d 'Check the Redis a lock depends on: eviction, replica role, persistence, ACL, clock offset, latency against the ttl'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from run status list release acquire extend wait history forget doctor top preempt leader help" -f -a "top" -d 'A live view of the locks under the prefix: holders, waiters, slots, last runs'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from run status list release acquire extend wait history forget doctor top preempt leader help" -f -a "preempt" -d 'Ask a lock\'s holder, wherever it runs, to stop gracefully (its command gets --preempt-signal, SIGKILL after its --kill-after; it releases and exits 80)'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from run status list release acquire extend wait history forget doctor top preempt leader help" -f -a "leader" -d 'Who leads an --elect name: host, pid, term (its fencing number), since, its --announce value; --watch prints a line per change, --is-me answers with the exit status (a readiness probe)'
complete -c redlock -n "__fish_redlock_using_subcommand help; and not __fish_seen_subcommand_from run status list release acquire extend wait history forget doctor top preempt leader help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
