
use builtin;
use str;

set edit:completion:arg-completer[redlock-run] = {|@words|
    fn spaces {|n|
        builtin:repeat $n ' ' | str:join ''
    }
    fn cand {|text desc|
        edit:complex-candidate $text &display=$text' '(spaces (- 14 (wcswidth $text)))$desc
    }
    var command = 'redlock-run'
    for word $words[1..-1] {
        if (str:has-prefix $word '-') {
            break
        }
        set command = $command';'$word
    }
    var completions = [
        &'redlock-run'= {
            cand -k 'Name of the lock (any non-empty string). Give it several times to hold several names at once (up to 16): the command runs only while the run holds every one, and a run that cannot have them all holds none while it waits'
            cand --key 'Name of the lock (any non-empty string). Give it several times to hold several names at once (up to 16): the command runs only while the run holds every one, and a run that cannot have them all holds none while it waits'
            cand --redis 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters'
            cand --redis-url-file 'Read the Redis URL(s) from this file, one per line (for secrets)'
            cand --prefix 'Namespace prefix of every key (no braces) [default: redlock:]'
            cand --node-timeout 'Timeout of each request to a Redis node, 1ms to 365 days [default: ttl/15, at most 2s; a holder on a Cluster or through Sentinel ttl/20, at most 2s]'
            cand --tls-ca 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)'
            cand --tls-cert 'Client certificate, PEM, for mutual TLS (with --tls-key)'
            cand --tls-key 'Client private key, PEM, for mutual TLS (with --tls-cert)'
            cand --ttl 'Lease time, renewed while the command runs; 100ms to 365 days (e.g. 30s, 2m) [default: 30s]'
            cand -w 'How long to wait for a busy lock or an unreachable Redis: 0 tries once, up to 365 days, or "forever" [default: 0; with --once-id: forever]'
            cand --wait 'How long to wait for a busy lock or an unreachable Redis: 0 tries once, up to 365 days, or "forever" [default: 0; with --once-id: forever]'
            cand -E 'Exit status when the lock is busy (0-255; with 0, busy and waiting are not reported off a terminal) [default: 75]'
            cand --busy-exit-code 'Exit status when the lock is busy (0-255; with 0, busy and waiting are not reported off a terminal) [default: 75]'
            cand --renew-every 'Renewal interval, 1ms up to below the ttl [default: ttl/3]'
            cand --kill-after 'Grace between SIGTERM and SIGKILL when the command must stop, 0 to 365 days (it must fit in the ttl) [default: ttl/6, at most 5s]'
            cand --on-lost 'What to do when the lock is lost while the command runs'
            cand --hold-min 'Keep the lock this long after the start even if the command ends sooner (cron de-duplication across hosts whose clocks differ), up to 365 days'
            cand --max-hold 'Never hold the lock longer than this (1ms to 365 days): renewals stop and the command is stopped as for a lost lock (see --on-lost), exit 124'
            cand --events 'Write lifecycle events as JSON lines to this file (appended), or "-" for stderr'
            cand --metrics 'Write the run''s outcome in the Prometheus text format to this file (replaced whole, at the start and the end of the run), for node_exporter''s textfile collector; one file per lock name'
            cand --once-per 'Run once per slot of this period across all hosts: a length (1s to 365 days in ms, s, m, h, d, e.g. 1m, 1h, 1d: the slot is the Redis server''s time rounded down to a multiple of it from the Unix epoch, UTC; weeks, months and years are refused: give week or month with --tz), or a calendar period, day, week or month, in --tz''s zone (a day from local midnight, 23 or 25 hours across DST; an ISO week from Monday; a month from the 1st), taken from the Redis server''s time whatever the host clocks say. A try whose slot already had a run exiting 0, or whose slot''s run is in progress, is skipped: busy exit status, silent (said with --verbose); a failed run leaves the slot open for the next try'
            cand --tz 'With --once-per day, week or month: the time zone of the slots, an IANA name (Europe/Berlin, America/New_York; default UTC), from the system''s zoneinfo or the database built in (localtime, posixrules, posix/..., right/... and paths are refused). Every host of the job must give the same zone'
            cand --if-vanished 'With --once-per: what a slot does when its run vanished (started, then its host or wrapper died, so its end was never recorded). skip: the slot stays closed (it may have succeeded; at most once). rerun: the slot is open again and the next try on any host runs it (a waiting host as soon as the vanished run''s lease ends), up to --max-attempts starts per slot'
            cand --once-id 'Run once per ID (e.g. a release tag), across hosts and time: the first run for this name and ID runs the command; runs of the same ID that come meanwhile wait for it (--wait defaults to forever); when it exits 0 they exit 0 without running (one line says who ran it), when it fails one of them runs it (up to --max-attempts, 3); any later run of the ID exits 0 at once. The record is kept --retain. Not with --once-per or --limit'
            cand --splay 'With --once-per: spread a fleet''s tries over the first D of each slot (D shorter than the period). The try first fixes its slot from the Redis server''s time, then waits an offset in [0, D) drawn from this host, the name and the slot (different hosts spread; each slot draws again, so the host that runs the job rotates), then tries for that slot only: it never runs on behalf of the next one. The run starts up to D later'
            cand --max-attempts 'With --once-per: the most runs that may start in one slot (failed and vanished ones count, in the run history: --history must keep at least N); the next try is skipped with the reason attempts_exhausted. Default: 3 with --if-vanished rerun, no limit otherwise'
            cand --limit 'Let up to N runs hold the lock at once (a semaphore, 1 to 100): each holds one slot (REDLOCK_SLOT) with its own token, renewals and lost-lock detection. Every run on the name must give the same N. One server, Cluster or Sentinel. With several --key names, say which: --limit NAME=N (that name is a pool of N)'
            cand --shared 'Hold the name in shared mode: any number of --shared runs hold it at once, and a run without --shared takes it exclusively, never beside any holder. Writers go first: once an exclusive run waits, new shared runs wait behind it. Each shared holder has its own token, lease and fence. One server, Cluster or Sentinel. With several --key names, say which: --shared NAME'
            cand --supersede 'The newest run wins (CI): when this run starts waiting, every older run waiting on the name exits 73 without running (superseded). running: the holder is also asked to stop (it gets --preempt-signal, SIGKILL after its --kill-after, releases and exits 80) and this run starts after its release. Needs --wait; every run on the name must give --supersede (with --order-key, all of them). One server, Cluster or Sentinel'
            cand --order-key 'With --supersede: "newest" is the largest N (a pipeline or run number that a retry keeps, or the commit time; not Jenkins'' or buildbot''s BUILD_NUMBER, new for a rebuild; 0 to 2^53-1), not the latest arrival; a run whose N is lower than one that already started on the name exits 73 without running (outdated)'
            cand --preempt-signal 'The signal the command gets when a newer run preempts it (TERM, INT, HUP, USR1, ...) [default: TERM]; SIGKILL follows after --kill-after'
            cand --on-exit 'With --elect: what the leader does when its command exits by itself. resign: release, back off 2 renewal intervals, contend again; restart: run it again, keeping the lock, after a back-off of 1s doubling to 60s; exit: release and exit with its status [default: resign]'
            cand --elect-max-terms 'With --elect: exit after N terms (1 to 1000000), with the last term''s status'
            cand --announce 'A value recorded beside the holder (up to 256 characters; e.g. the leader''s address), shown by `redlock leader` and `redlock status`'
            cand --ready-file 'Create this file (atomically, holding the fencing number) when the command starts under the lock, and remove it before the command is stopped or when it ends: a readiness probe that says "this copy leads"'
            cand --retain 'How long the name''s fence counter and run history are kept after its last use (1s to 365 days), refreshed by every acquisition and release; a name unused that long leaves nothing in Redis. With --once-per, at least twice the period [default: 30d]'
            cand --history 'How many past runs the lock''s history keeps (`redlock history`, `redlock status`), 0 to 1000; 0 records nothing; with --once-per, at least --max-attempts [default: 20]'
            cand --label 'Record TEXT in the holder metadata and the history instead of the command line (for a command whose arguments carry secrets the masking does not know); wins over --hide-args'
            cand --local-dir 'Directory of the host-local queue: runs that wait queue here first, and only the first of each host contends in Redis; share one between users to queue them together. The host also keeps here what it learned of its servers (each one''s run ID, for the lock-delay; a Cluster''s slot map; a Sentinel master''s address) [env: REDLOCK_LOCAL_DIR] [default: $XDG_RUNTIME_DIR/redlock, else /tmp/redlock-UID]'
            cand --tls-insecure-skip-verify 'Do not verify the server''s TLS certificate or name (tests only; warns every run)'
            cand --fair 'Wait in a first-come, first-served queue: the lock goes to the longest waiter, and the waiting line says your place ("you are #2 of 4"). Every run on the name must give --fair. One server, Cluster or Sentinel'
            cand --uninterruptible 'Refuse to be preempted (--supersede running, redlock preempt): a newer run waits for this one to end instead'
            cand --elect 'Hot standby: wait for the lock for as long as this runs, run the command while holding it, and when the lock is lost (the command is stopped as for any lost lock) contend again instead of exiting 79. Each term has a new fencing number. Exits on SIGTERM/SIGINT (the command is stopped, the lock released and the next standby woken), on a usage or auth error, or after --elect-max-terms. Not with --once-per, --once-id, --limit, --supersede, --hold-min, --wait'
            cand --hide-args 'Record only the program name in the holder metadata, not its arguments'
            cand --no-local-queue 'Wait in Redis directly, without the host-local queue (every waiting run holds a Redis connection) [env: REDLOCK_NO_LOCAL_QUEUE=1|0, true|false, yes|no, on|off]. A flag on the command line wins over both variables; from the same place, this wins over the directory'
            cand -q 'Print nothing but errors (no waiting line, no busy note); a vanished run''s one line (told once in the fleet) is still printed'
            cand --quiet 'Print nothing but errors (no waiting line, no busy note); a vanished run''s one line (told once in the fleet) is still printed'
            cand -v 'Say what happens: connect retries, acquire, renewals, release'
            cand --verbose 'Say what happens: connect retries, acquire, renewals, release'
            cand -h 'Print help (see more with ''--help'')'
            cand --help 'Print help (see more with ''--help'')'
            cand -V 'Print version'
            cand --version 'Print version'
        }
    ]
    $completions[$command]
}
