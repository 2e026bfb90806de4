
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'redlock' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'redlock'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'redlock' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Run a command while holding a lock (same as redlock-run)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show whether locks are held, and by whom')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the held locks under the prefix')
            [CompletionResult]::new('release', 'release', [CompletionResultType]::ParameterValue, 'Release a lock: with --token only that holder''s, with --force whoever holds it')
            [CompletionResult]::new('acquire', 'acquire', [CompletionResultType]::ParameterValue, 'Take a lock and print its token (for scripts that cannot wrap one command)')
            [CompletionResult]::new('extend', 'extend', [CompletionResultType]::ParameterValue, 'Extend a lock held with a token')
            [CompletionResult]::new('wait', 'wait', [CompletionResultType]::ParameterValue, 'Wait until a lock is free, without taking it')
            [CompletionResult]::new('history', 'history', [CompletionResultType]::ParameterValue, 'Show a lock''s last runs (recorded by redlock-run), newest first')
            [CompletionResult]::new('forget', 'forget', [CompletionResultType]::ParameterValue, 'Delete a free lock''s run history, fence counter and --order-key mark now, instead of --retain after its last use (refused while the lock is held or waited for)')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Check the Redis a lock depends on: eviction, replica role, persistence, ACL, clock offset, latency against the ttl')
            [CompletionResult]::new('top', 'top', [CompletionResultType]::ParameterValue, 'A live view of the locks under the prefix: holders, waiters, slots, last runs')
            [CompletionResult]::new('preempt', 'preempt', [CompletionResultType]::ParameterValue, 'Ask a lock''s holder, wherever it runs, to stop gracefully (its command gets --preempt-signal, SIGKILL after its --kill-after; it releases and exits 80)')
            [CompletionResult]::new('leader', 'leader', [CompletionResultType]::ParameterValue, 'Who leads an --elect name: host, pid, term (its fencing number), since, its --announce value; --watch prints a line per change, --is-me answers with the exit status (a readiness probe)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'redlock;run' {
            [CompletionResult]::new('-k', '-k', [CompletionResultType]::ParameterName, 'Name of the lock (any non-empty string). Give it several times to hold several names at once (up to 16): the command runs only while the run holds every one, and a run that cannot have them all holds none while it waits')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Name of the lock (any non-empty string). Give it several times to hold several names at once (up to 16): the command runs only while the run holds every one, and a run that cannot have them all holds none while it waits')
            [CompletionResult]::new('--redis', '--redis', [CompletionResultType]::ParameterName, 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters')
            [CompletionResult]::new('--redis-url-file', '--redis-url-file', [CompletionResultType]::ParameterName, 'Read the Redis URL(s) from this file, one per line (for secrets)')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Namespace prefix of every key (no braces) [default: redlock:]')
            [CompletionResult]::new('--node-timeout', '--node-timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to a Redis node, 1ms to 365 days [default: ttl/15, at most 2s; a holder on a Cluster or through Sentinel ttl/20, at most 2s]')
            [CompletionResult]::new('--tls-ca', '--tls-ca', [CompletionResultType]::ParameterName, 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Client certificate, PEM, for mutual TLS (with --tls-key)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'Client private key, PEM, for mutual TLS (with --tls-cert)')
            [CompletionResult]::new('--ttl', '--ttl', [CompletionResultType]::ParameterName, 'Lease time, renewed while the command runs; 100ms to 365 days (e.g. 30s, 2m) [default: 30s]')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'How long to wait for a busy lock or an unreachable Redis: 0 tries once, up to 365 days, or "forever" [default: 0; with --once-id: forever]')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'How long to wait for a busy lock or an unreachable Redis: 0 tries once, up to 365 days, or "forever" [default: 0; with --once-id: forever]')
            [CompletionResult]::new('-E', '-E ', [CompletionResultType]::ParameterName, 'Exit status when the lock is busy (0-255; with 0, busy and waiting are not reported off a terminal) [default: 75]')
            [CompletionResult]::new('--busy-exit-code', '--busy-exit-code', [CompletionResultType]::ParameterName, 'Exit status when the lock is busy (0-255; with 0, busy and waiting are not reported off a terminal) [default: 75]')
            [CompletionResult]::new('--renew-every', '--renew-every', [CompletionResultType]::ParameterName, 'Renewal interval, 1ms up to below the ttl [default: ttl/3]')
            [CompletionResult]::new('--kill-after', '--kill-after', [CompletionResultType]::ParameterName, 'Grace between SIGTERM and SIGKILL when the command must stop, 0 to 365 days (it must fit in the ttl) [default: ttl/6, at most 5s]')
            [CompletionResult]::new('--on-lost', '--on-lost', [CompletionResultType]::ParameterName, 'What to do when the lock is lost while the command runs')
            [CompletionResult]::new('--hold-min', '--hold-min', [CompletionResultType]::ParameterName, 'Keep the lock this long after the start even if the command ends sooner (cron de-duplication across hosts whose clocks differ), up to 365 days')
            [CompletionResult]::new('--max-hold', '--max-hold', [CompletionResultType]::ParameterName, 'Never hold the lock longer than this (1ms to 365 days): renewals stop and the command is stopped as for a lost lock (see --on-lost), exit 124')
            [CompletionResult]::new('--events', '--events', [CompletionResultType]::ParameterName, 'Write lifecycle events as JSON lines to this file (appended), or "-" for stderr')
            [CompletionResult]::new('--metrics', '--metrics', [CompletionResultType]::ParameterName, 'Write the run''s outcome in the Prometheus text format to this file (replaced whole, at the start and the end of the run), for node_exporter''s textfile collector; one file per lock name')
            [CompletionResult]::new('--once-per', '--once-per', [CompletionResultType]::ParameterName, 'Run once per slot of this period across all hosts: a length (1s to 365 days in ms, s, m, h, d, e.g. 1m, 1h, 1d: the slot is the Redis server''s time rounded down to a multiple of it from the Unix epoch, UTC; weeks, months and years are refused: give week or month with --tz), or a calendar period, day, week or month, in --tz''s zone (a day from local midnight, 23 or 25 hours across DST; an ISO week from Monday; a month from the 1st), taken from the Redis server''s time whatever the host clocks say. A try whose slot already had a run exiting 0, or whose slot''s run is in progress, is skipped: busy exit status, silent (said with --verbose); a failed run leaves the slot open for the next try')
            [CompletionResult]::new('--tz', '--tz', [CompletionResultType]::ParameterName, 'With --once-per day, week or month: the time zone of the slots, an IANA name (Europe/Berlin, America/New_York; default UTC), from the system''s zoneinfo or the database built in (localtime, posixrules, posix/..., right/... and paths are refused). Every host of the job must give the same zone')
            [CompletionResult]::new('--if-vanished', '--if-vanished', [CompletionResultType]::ParameterName, 'With --once-per: what a slot does when its run vanished (started, then its host or wrapper died, so its end was never recorded). skip: the slot stays closed (it may have succeeded; at most once). rerun: the slot is open again and the next try on any host runs it (a waiting host as soon as the vanished run''s lease ends), up to --max-attempts starts per slot')
            [CompletionResult]::new('--once-id', '--once-id', [CompletionResultType]::ParameterName, 'Run once per ID (e.g. a release tag), across hosts and time: the first run for this name and ID runs the command; runs of the same ID that come meanwhile wait for it (--wait defaults to forever); when it exits 0 they exit 0 without running (one line says who ran it), when it fails one of them runs it (up to --max-attempts, 3); any later run of the ID exits 0 at once. The record is kept --retain. Not with --once-per or --limit')
            [CompletionResult]::new('--splay', '--splay', [CompletionResultType]::ParameterName, 'With --once-per: spread a fleet''s tries over the first D of each slot (D shorter than the period). The try first fixes its slot from the Redis server''s time, then waits an offset in [0, D) drawn from this host, the name and the slot (different hosts spread; each slot draws again, so the host that runs the job rotates), then tries for that slot only: it never runs on behalf of the next one. The run starts up to D later')
            [CompletionResult]::new('--max-attempts', '--max-attempts', [CompletionResultType]::ParameterName, 'With --once-per: the most runs that may start in one slot (failed and vanished ones count, in the run history: --history must keep at least N); the next try is skipped with the reason attempts_exhausted. Default: 3 with --if-vanished rerun, no limit otherwise')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'Let up to N runs hold the lock at once (a semaphore, 1 to 100): each holds one slot (REDLOCK_SLOT) with its own token, renewals and lost-lock detection. Every run on the name must give the same N. One server, Cluster or Sentinel. With several --key names, say which: --limit NAME=N (that name is a pool of N)')
            [CompletionResult]::new('--shared', '--shared', [CompletionResultType]::ParameterName, 'Hold the name in shared mode: any number of --shared runs hold it at once, and a run without --shared takes it exclusively, never beside any holder. Writers go first: once an exclusive run waits, new shared runs wait behind it. Each shared holder has its own token, lease and fence. One server, Cluster or Sentinel. With several --key names, say which: --shared NAME')
            [CompletionResult]::new('--supersede', '--supersede', [CompletionResultType]::ParameterName, 'The newest run wins (CI): when this run starts waiting, every older run waiting on the name exits 73 without running (superseded). running: the holder is also asked to stop (it gets --preempt-signal, SIGKILL after its --kill-after, releases and exits 80) and this run starts after its release. Needs --wait; every run on the name must give --supersede (with --order-key, all of them). One server, Cluster or Sentinel')
            [CompletionResult]::new('--order-key', '--order-key', [CompletionResultType]::ParameterName, 'With --supersede: "newest" is the largest N (a pipeline or run number that a retry keeps, or the commit time; not Jenkins'' or buildbot''s BUILD_NUMBER, new for a rebuild; 0 to 2^53-1), not the latest arrival; a run whose N is lower than one that already started on the name exits 73 without running (outdated)')
            [CompletionResult]::new('--preempt-signal', '--preempt-signal', [CompletionResultType]::ParameterName, 'The signal the command gets when a newer run preempts it (TERM, INT, HUP, USR1, ...) [default: TERM]; SIGKILL follows after --kill-after')
            [CompletionResult]::new('--on-exit', '--on-exit', [CompletionResultType]::ParameterName, 'With --elect: what the leader does when its command exits by itself. resign: release, back off 2 renewal intervals, contend again; restart: run it again, keeping the lock, after a back-off of 1s doubling to 60s; exit: release and exit with its status [default: resign]')
            [CompletionResult]::new('--elect-max-terms', '--elect-max-terms', [CompletionResultType]::ParameterName, 'With --elect: exit after N terms (1 to 1000000), with the last term''s status')
            [CompletionResult]::new('--announce', '--announce', [CompletionResultType]::ParameterName, 'A value recorded beside the holder (up to 256 characters; e.g. the leader''s address), shown by `redlock leader` and `redlock status`')
            [CompletionResult]::new('--ready-file', '--ready-file', [CompletionResultType]::ParameterName, 'Create this file (atomically, holding the fencing number) when the command starts under the lock, and remove it before the command is stopped or when it ends: a readiness probe that says "this copy leads"')
            [CompletionResult]::new('--retain', '--retain', [CompletionResultType]::ParameterName, 'How long the name''s fence counter and run history are kept after its last use (1s to 365 days), refreshed by every acquisition and release; a name unused that long leaves nothing in Redis. With --once-per, at least twice the period [default: 30d]')
            [CompletionResult]::new('--history', '--history', [CompletionResultType]::ParameterName, 'How many past runs the lock''s history keeps (`redlock history`, `redlock status`), 0 to 1000; 0 records nothing; with --once-per, at least --max-attempts [default: 20]')
            [CompletionResult]::new('--label', '--label', [CompletionResultType]::ParameterName, 'Record TEXT in the holder metadata and the history instead of the command line (for a command whose arguments carry secrets the masking does not know); wins over --hide-args')
            [CompletionResult]::new('--local-dir', '--local-dir', [CompletionResultType]::ParameterName, 'Directory of the host-local queue: runs that wait queue here first, and only the first of each host contends in Redis; share one between users to queue them together. The host also keeps here what it learned of its servers (each one''s run ID, for the lock-delay; a Cluster''s slot map; a Sentinel master''s address) [env: REDLOCK_LOCAL_DIR] [default: $XDG_RUNTIME_DIR/redlock, else /tmp/redlock-UID]')
            [CompletionResult]::new('--tls-insecure-skip-verify', '--tls-insecure-skip-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate or name (tests only; warns every run)')
            [CompletionResult]::new('--fair', '--fair', [CompletionResultType]::ParameterName, 'Wait in a first-come, first-served queue: the lock goes to the longest waiter, and the waiting line says your place ("you are #2 of 4"). Every run on the name must give --fair. One server, Cluster or Sentinel')
            [CompletionResult]::new('--uninterruptible', '--uninterruptible', [CompletionResultType]::ParameterName, 'Refuse to be preempted (--supersede running, redlock preempt): a newer run waits for this one to end instead')
            [CompletionResult]::new('--elect', '--elect', [CompletionResultType]::ParameterName, 'Hot standby: wait for the lock for as long as this runs, run the command while holding it, and when the lock is lost (the command is stopped as for any lost lock) contend again instead of exiting 79. Each term has a new fencing number. Exits on SIGTERM/SIGINT (the command is stopped, the lock released and the next standby woken), on a usage or auth error, or after --elect-max-terms. Not with --once-per, --once-id, --limit, --supersede, --hold-min, --wait')
            [CompletionResult]::new('--hide-args', '--hide-args', [CompletionResultType]::ParameterName, 'Record only the program name in the holder metadata, not its arguments')
            [CompletionResult]::new('--no-local-queue', '--no-local-queue', [CompletionResultType]::ParameterName, 'Wait in Redis directly, without the host-local queue (every waiting run holds a Redis connection) [env: REDLOCK_NO_LOCAL_QUEUE=1|0, true|false, yes|no, on|off]. A flag on the command line wins over both variables; from the same place, this wins over the directory')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print nothing but errors (no waiting line, no busy note); a vanished run''s one line (told once in the fleet) is still printed')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print nothing but errors (no waiting line, no busy note); a vanished run''s one line (told once in the fleet) is still printed')
            [CompletionResult]::new('-v', '-v', [CompletionResultType]::ParameterName, 'Say what happens: connect retries, acquire, renewals, release')
            [CompletionResult]::new('--verbose', '--verbose', [CompletionResultType]::ParameterName, 'Say what happens: connect retries, acquire, renewals, release')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'redlock;status' {
            [CompletionResult]::new('--redis', '--redis', [CompletionResultType]::ParameterName, 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters')
            [CompletionResult]::new('--redis-url-file', '--redis-url-file', [CompletionResultType]::ParameterName, 'Read the Redis URL(s) from this file, one per line (for secrets)')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Namespace prefix of every key (no braces) [default: redlock:]')
            [CompletionResult]::new('--tls-ca', '--tls-ca', [CompletionResultType]::ParameterName, 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Client certificate, PEM, for mutual TLS (with --tls-key)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'Client private key, PEM, for mutual TLS (with --tls-cert)')
            [CompletionResult]::new('--local-dir', '--local-dir', [CompletionResultType]::ParameterName, 'Directory of the host-local queue whose waiters to count, as the runs were given it [default: $XDG_RUNTIME_DIR/redlock, else /tmp/redlock-UID]')
            [CompletionResult]::new('--node-timeout', '--node-timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]')
            [CompletionResult]::new('--tls-insecure-skip-verify', '--tls-insecure-skip-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate or name (tests only; warns every run)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print JSON (one object per line)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'redlock;list' {
            [CompletionResult]::new('--redis', '--redis', [CompletionResultType]::ParameterName, 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters')
            [CompletionResult]::new('--redis-url-file', '--redis-url-file', [CompletionResultType]::ParameterName, 'Read the Redis URL(s) from this file, one per line (for secrets)')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Namespace prefix of every key (no braces) [default: redlock:]')
            [CompletionResult]::new('--tls-ca', '--tls-ca', [CompletionResultType]::ParameterName, 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Client certificate, PEM, for mutual TLS (with --tls-key)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'Client private key, PEM, for mutual TLS (with --tls-cert)')
            [CompletionResult]::new('--node-timeout', '--node-timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]')
            [CompletionResult]::new('--tls-insecure-skip-verify', '--tls-insecure-skip-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate or name (tests only; warns every run)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print JSON (one object per line)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'redlock;release' {
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'Release only if this token holds the lock')
            [CompletionResult]::new('--slot', '--slot', [CompletionResultType]::ParameterName, 'The slot of a semaphore (--limit) to release, 1 to N [default: --token: the slot the token holds; --if-dead: every slot; --force asks for it]')
            [CompletionResult]::new('--redis', '--redis', [CompletionResultType]::ParameterName, 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters')
            [CompletionResult]::new('--redis-url-file', '--redis-url-file', [CompletionResultType]::ParameterName, 'Read the Redis URL(s) from this file, one per line (for secrets)')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Namespace prefix of every key (no braces) [default: redlock:]')
            [CompletionResult]::new('--tls-ca', '--tls-ca', [CompletionResultType]::ParameterName, 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Client certificate, PEM, for mutual TLS (with --tls-key)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'Client private key, PEM, for mutual TLS (with --tls-cert)')
            [CompletionResult]::new('--node-timeout', '--node-timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]')
            [CompletionResult]::new('--force', '--force', [CompletionResultType]::ParameterName, 'Remove the lock whoever holds it (says whose lock it was)')
            [CompletionResult]::new('--if-dead', '--if-dead', [CompletionResultType]::ParameterName, 'Remove the lock only on proof that its holder is gone: its process recorded exactly (not `acquire`''s guess), on this machine (host name and boot id), in this PID namespace, and gone (no such process, a zombie, or a reused pid). Anything else, a --hold-min keep included, is a refusal (exit 75). On a semaphore without --slot, every slot whose holder is proved gone')
            [CompletionResult]::new('--tls-insecure-skip-verify', '--tls-insecure-skip-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate or name (tests only; warns every run)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'redlock;acquire' {
            [CompletionResult]::new('--ttl', '--ttl', [CompletionResultType]::ParameterName, 'Lease time; the lock expires unless extended (e.g. 5m), 100ms to 365 days [default: 30s]')
            [CompletionResult]::new('-w', '-w', [CompletionResultType]::ParameterName, 'How long to wait for a busy lock or an unreachable Redis: 0 tries once, up to 365 days, or "forever" [default: 0; with --once-id: forever]')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'How long to wait for a busy lock or an unreachable Redis: 0 tries once, up to 365 days, or "forever" [default: 0; with --once-id: forever]')
            [CompletionResult]::new('-E', '-E ', [CompletionResultType]::ParameterName, 'Exit status when the lock is busy (0-255; with 0, busy and waiting are not reported off a terminal) [default: 75]')
            [CompletionResult]::new('--busy-exit-code', '--busy-exit-code', [CompletionResultType]::ParameterName, 'Exit status when the lock is busy (0-255; with 0, busy and waiting are not reported off a terminal) [default: 75]')
            [CompletionResult]::new('--retain', '--retain', [CompletionResultType]::ParameterName, 'How long the name''s fence counter and run history are kept after its last use (1s to 365 days), refreshed by every acquisition and release; a name unused that long leaves nothing in Redis. With --once-per, at least twice the period [default: 30d]')
            [CompletionResult]::new('--holder-pid', '--holder-pid', [CompletionResultType]::ParameterName, 'The process the lock belongs to (e.g. `$$`, the calling script): with it, `redlock release --if-dead` removes the lock once that process is gone; without it, the caller shown is a guess from the process tree and --if-dead refuses')
            [CompletionResult]::new('--redis', '--redis', [CompletionResultType]::ParameterName, 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters')
            [CompletionResult]::new('--redis-url-file', '--redis-url-file', [CompletionResultType]::ParameterName, 'Read the Redis URL(s) from this file, one per line (for secrets)')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Namespace prefix of every key (no braces) [default: redlock:]')
            [CompletionResult]::new('--node-timeout', '--node-timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to a Redis node, 1ms to 365 days [default: ttl/15, at most 2s; a holder on a Cluster or through Sentinel ttl/20, at most 2s]')
            [CompletionResult]::new('--tls-ca', '--tls-ca', [CompletionResultType]::ParameterName, 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Client certificate, PEM, for mutual TLS (with --tls-key)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'Client private key, PEM, for mutual TLS (with --tls-cert)')
            [CompletionResult]::new('--shared', '--shared', [CompletionResultType]::ParameterName, 'Take a share of the name (see `redlock-run --shared`): release it with `redlock release NAME --token T`, renew it with `redlock extend`')
            [CompletionResult]::new('--tls-insecure-skip-verify', '--tls-insecure-skip-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate or name (tests only; warns every run)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print JSON (token, key, ttl_ms)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'No progress note while waiting')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'No progress note while waiting')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'redlock;extend' {
            [CompletionResult]::new('--token', '--token', [CompletionResultType]::ParameterName, 'The token printed by `redlock acquire`')
            [CompletionResult]::new('--ttl', '--ttl', [CompletionResultType]::ParameterName, 'New time to live from now [default: 30s]')
            [CompletionResult]::new('--redis', '--redis', [CompletionResultType]::ParameterName, 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters')
            [CompletionResult]::new('--redis-url-file', '--redis-url-file', [CompletionResultType]::ParameterName, 'Read the Redis URL(s) from this file, one per line (for secrets)')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Namespace prefix of every key (no braces) [default: redlock:]')
            [CompletionResult]::new('--node-timeout', '--node-timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to a Redis node, 1ms to 365 days [default: ttl/15, at most 2s; a holder on a Cluster or through Sentinel ttl/20, at most 2s]')
            [CompletionResult]::new('--tls-ca', '--tls-ca', [CompletionResultType]::ParameterName, 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Client certificate, PEM, for mutual TLS (with --tls-key)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'Client private key, PEM, for mutual TLS (with --tls-cert)')
            [CompletionResult]::new('--tls-insecure-skip-verify', '--tls-insecure-skip-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate or name (tests only; warns every run)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print JSON (name, key, token, ttl_ms) when extended')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'redlock;wait' {
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Give up after this long (up to 365 days, or "forever") [default: forever]')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Give up after this long (up to 365 days, or "forever") [default: forever]')
            [CompletionResult]::new('--redis', '--redis', [CompletionResultType]::ParameterName, 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters')
            [CompletionResult]::new('--redis-url-file', '--redis-url-file', [CompletionResultType]::ParameterName, 'Read the Redis URL(s) from this file, one per line (for secrets)')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Namespace prefix of every key (no braces) [default: redlock:]')
            [CompletionResult]::new('--tls-ca', '--tls-ca', [CompletionResultType]::ParameterName, 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Client certificate, PEM, for mutual TLS (with --tls-key)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'Client private key, PEM, for mutual TLS (with --tls-cert)')
            [CompletionResult]::new('--node-timeout', '--node-timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]')
            [CompletionResult]::new('--tls-insecure-skip-verify', '--tls-insecure-skip-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate or name (tests only; warns every run)')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Print nothing but errors')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Print nothing but errors')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'redlock;history' {
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Show at most this many runs [default: all that are kept]')
            [CompletionResult]::new('--limit', '--limit', [CompletionResultType]::ParameterName, 'Show at most this many runs [default: all that are kept]')
            [CompletionResult]::new('--redis', '--redis', [CompletionResultType]::ParameterName, 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters')
            [CompletionResult]::new('--redis-url-file', '--redis-url-file', [CompletionResultType]::ParameterName, 'Read the Redis URL(s) from this file, one per line (for secrets)')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Namespace prefix of every key (no braces) [default: redlock:]')
            [CompletionResult]::new('--tls-ca', '--tls-ca', [CompletionResultType]::ParameterName, 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Client certificate, PEM, for mutual TLS (with --tls-key)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'Client private key, PEM, for mutual TLS (with --tls-cert)')
            [CompletionResult]::new('--since', '--since', [CompletionResultType]::ParameterName, 'With --timeline: how far back to draw, 1m to 365 days [default: from the oldest run shown to now, at a round column width]')
            [CompletionResult]::new('--node-timeout', '--node-timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]')
            [CompletionResult]::new('--tls-insecure-skip-verify', '--tls-insecure-skip-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate or name (tests only; warns every run)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print JSON (one object: the name and its runs)')
            [CompletionResult]::new('--timeline', '--timeline', [CompletionResultType]::ParameterName, 'Draw the runs: one row per host, time across (UTC), each run a bar shaded by how it ended; NAME may be a pattern (nightly-*) [colours on a terminal, NO_COLOR honoured; the width of the terminal, else $COLUMNS, else 80]')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'redlock;forget' {
            [CompletionResult]::new('--redis', '--redis', [CompletionResultType]::ParameterName, 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters')
            [CompletionResult]::new('--redis-url-file', '--redis-url-file', [CompletionResultType]::ParameterName, 'Read the Redis URL(s) from this file, one per line (for secrets)')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Namespace prefix of every key (no braces) [default: redlock:]')
            [CompletionResult]::new('--tls-ca', '--tls-ca', [CompletionResultType]::ParameterName, 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Client certificate, PEM, for mutual TLS (with --tls-key)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'Client private key, PEM, for mutual TLS (with --tls-cert)')
            [CompletionResult]::new('--node-timeout', '--node-timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]')
            [CompletionResult]::new('--tls-insecure-skip-verify', '--tls-insecure-skip-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate or name (tests only; warns every run)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'redlock;doctor' {
            [CompletionResult]::new('-k', '-k', [CompletionResultType]::ParameterName, 'Lock name whose keys are checked (ACL key patterns, Cluster slot) [default: doctor]')
            [CompletionResult]::new('--key', '--key', [CompletionResultType]::ParameterName, 'Lock name whose keys are checked (ACL key patterns, Cluster slot) [default: doctor]')
            [CompletionResult]::new('--ttl', '--ttl', [CompletionResultType]::ParameterName, 'The ttl the latency is judged against, 100ms to 365 days [default: 30s]')
            [CompletionResult]::new('--redis', '--redis', [CompletionResultType]::ParameterName, 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters')
            [CompletionResult]::new('--redis-url-file', '--redis-url-file', [CompletionResultType]::ParameterName, 'Read the Redis URL(s) from this file, one per line (for secrets)')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Namespace prefix of every key (no braces) [default: redlock:]')
            [CompletionResult]::new('--node-timeout', '--node-timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to a Redis node, 1ms to 365 days [default: ttl/15, at most 2s; a holder on a Cluster or through Sentinel ttl/20, at most 2s]')
            [CompletionResult]::new('--tls-ca', '--tls-ca', [CompletionResultType]::ParameterName, 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Client certificate, PEM, for mutual TLS (with --tls-key)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'Client private key, PEM, for mutual TLS (with --tls-cert)')
            [CompletionResult]::new('--tls-insecure-skip-verify', '--tls-insecure-skip-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate or name (tests only; warns every run)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print one JSON object (nodes, findings, worst, counts, exit)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'redlock;top' {
            [CompletionResult]::new('--redis', '--redis', [CompletionResultType]::ParameterName, 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters')
            [CompletionResult]::new('--redis-url-file', '--redis-url-file', [CompletionResultType]::ParameterName, 'Read the Redis URL(s) from this file, one per line (for secrets)')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Namespace prefix of every key (no braces) [default: redlock:]')
            [CompletionResult]::new('--tls-ca', '--tls-ca', [CompletionResultType]::ParameterName, 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Client certificate, PEM, for mutual TLS (with --tls-key)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'Client private key, PEM, for mutual TLS (with --tls-cert)')
            [CompletionResult]::new('-n', '-n', [CompletionResultType]::ParameterName, 'Refresh every DURATION, 100ms to 1h [default: 1s]')
            [CompletionResult]::new('--interval', '--interval', [CompletionResultType]::ParameterName, 'Refresh every DURATION, 100ms to 1h [default: 1s]')
            [CompletionResult]::new('--node-timeout', '--node-timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]')
            [CompletionResult]::new('--tls-insecure-skip-verify', '--tls-insecure-skip-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate or name (tests only; warns every run)')
            [CompletionResult]::new('--once', '--once', [CompletionResultType]::ParameterName, 'Print one frame as text and exit (for scripts; no terminal needed)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'redlock;preempt' {
            [CompletionResult]::new('--signal', '--signal', [CompletionResultType]::ParameterName, 'The signal the command gets (TERM, INT, HUP, ...) [default: the holder''s --preempt-signal]')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Wait until the holder has stopped and released, at most DURATION (1ms to 365 days); 75 when it still holds the lock then')
            [CompletionResult]::new('--redis', '--redis', [CompletionResultType]::ParameterName, 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters')
            [CompletionResult]::new('--redis-url-file', '--redis-url-file', [CompletionResultType]::ParameterName, 'Read the Redis URL(s) from this file, one per line (for secrets)')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Namespace prefix of every key (no braces) [default: redlock:]')
            [CompletionResult]::new('--tls-ca', '--tls-ca', [CompletionResultType]::ParameterName, 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Client certificate, PEM, for mutual TLS (with --tls-key)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'Client private key, PEM, for mutual TLS (with --tls-cert)')
            [CompletionResult]::new('--node-timeout', '--node-timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]')
            [CompletionResult]::new('--tls-insecure-skip-verify', '--tls-insecure-skip-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate or name (tests only; warns every run)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'redlock;leader' {
            [CompletionResult]::new('--redis', '--redis', [CompletionResultType]::ParameterName, 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters')
            [CompletionResult]::new('--redis-url-file', '--redis-url-file', [CompletionResultType]::ParameterName, 'Read the Redis URL(s) from this file, one per line (for secrets)')
            [CompletionResult]::new('--prefix', '--prefix', [CompletionResultType]::ParameterName, 'Namespace prefix of every key (no braces) [default: redlock:]')
            [CompletionResult]::new('--tls-ca', '--tls-ca', [CompletionResultType]::ParameterName, 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)')
            [CompletionResult]::new('--tls-cert', '--tls-cert', [CompletionResultType]::ParameterName, 'Client certificate, PEM, for mutual TLS (with --tls-key)')
            [CompletionResult]::new('--tls-key', '--tls-key', [CompletionResultType]::ParameterName, 'Client private key, PEM, for mutual TLS (with --tls-cert)')
            [CompletionResult]::new('--node-timeout', '--node-timeout', [CompletionResultType]::ParameterName, 'Timeout of each request to a Redis node, 1ms to 365 days [default: 2s]')
            [CompletionResult]::new('--watch', '--watch', [CompletionResultType]::ParameterName, 'Print a line (with --json, a JSON line) now and at every change of leader, until interrupted; changes are seen within 250ms')
            [CompletionResult]::new('--is-me', '--is-me', [CompletionResultType]::ParameterName, 'Exit 0 when this host leads, 1 when another does or none does (69 when Redis cannot be reached): a readiness probe. The host is REDLOCK_HOST when set, else the machine''s name, as the runs record it')
            [CompletionResult]::new('--tls-insecure-skip-verify', '--tls-insecure-skip-verify', [CompletionResultType]::ParameterName, 'Do not verify the server''s TLS certificate or name (tests only; warns every run)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'redlock;help' {
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Run a command while holding a lock (same as redlock-run)')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'Show whether locks are held, and by whom')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the held locks under the prefix')
            [CompletionResult]::new('release', 'release', [CompletionResultType]::ParameterValue, 'Release a lock: with --token only that holder''s, with --force whoever holds it')
            [CompletionResult]::new('acquire', 'acquire', [CompletionResultType]::ParameterValue, 'Take a lock and print its token (for scripts that cannot wrap one command)')
            [CompletionResult]::new('extend', 'extend', [CompletionResultType]::ParameterValue, 'Extend a lock held with a token')
            [CompletionResult]::new('wait', 'wait', [CompletionResultType]::ParameterValue, 'Wait until a lock is free, without taking it')
            [CompletionResult]::new('history', 'history', [CompletionResultType]::ParameterValue, 'Show a lock''s last runs (recorded by redlock-run), newest first')
            [CompletionResult]::new('forget', 'forget', [CompletionResultType]::ParameterValue, 'Delete a free lock''s run history, fence counter and --order-key mark now, instead of --retain after its last use (refused while the lock is held or waited for)')
            [CompletionResult]::new('doctor', 'doctor', [CompletionResultType]::ParameterValue, 'Check the Redis a lock depends on: eviction, replica role, persistence, ACL, clock offset, latency against the ttl')
            [CompletionResult]::new('top', 'top', [CompletionResultType]::ParameterValue, 'A live view of the locks under the prefix: holders, waiters, slots, last runs')
            [CompletionResult]::new('preempt', 'preempt', [CompletionResultType]::ParameterValue, 'Ask a lock''s holder, wherever it runs, to stop gracefully (its command gets --preempt-signal, SIGKILL after its --kill-after; it releases and exits 80)')
            [CompletionResult]::new('leader', 'leader', [CompletionResultType]::ParameterValue, 'Who leads an --elect name: host, pid, term (its fencing number), since, its --announce value; --watch prints a line per change, --is-me answers with the exit status (a readiness probe)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'redlock;help;run' {
            break
        }
        'redlock;help;status' {
            break
        }
        'redlock;help;list' {
            break
        }
        'redlock;help;release' {
            break
        }
        'redlock;help;acquire' {
            break
        }
        'redlock;help;extend' {
            break
        }
        'redlock;help;wait' {
            break
        }
        'redlock;help;history' {
            break
        }
        'redlock;help;forget' {
            break
        }
        'redlock;help;doctor' {
            break
        }
        'redlock;help;top' {
            break
        }
        'redlock;help;preempt' {
            break
        }
        'redlock;help;leader' {
            break
        }
        'redlock;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
