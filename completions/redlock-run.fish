complete -c redlock-run -s k -l key -d 'Name of the lock (any non-empty string)' -r
complete -c redlock-run -l redis -d 'Redis URL: redis://[user:pass@]host[:port][/db], rediss://… (TLS), unix:///path, redis+cluster://host:port[,host:port…] (Cluster), or redis+sentinel://[user:pass@]host:port[,host:port…]/MASTER[/db] (Sentinel). Repeat (or comma-separate) for the Redlock algorithm over independent masters' -r
complete -c redlock-run -l redis-url-file -d 'Read the Redis URL(s) from this file, one per line (for secrets)' -r -F
complete -c redlock-run -l prefix -d 'Namespace prefix of every key (no braces) [default: redlock:]' -r
complete -c redlock-run -l node-timeout -d 'Timeout of each request to a Redis node, 1ms to 365 days [default: ttl/15, at most 2s]' -r
complete -c redlock-run -l tls-ca -d 'CA certificate(s), PEM, that rediss:// servers must chain to (replaces the system roots)' -r -F
complete -c redlock-run -l tls-cert -d 'Client certificate, PEM, for mutual TLS (with --tls-key)' -r -F
complete -c redlock-run -l tls-key -d 'Client private key, PEM, for mutual TLS (with --tls-cert)' -r -F
complete -c redlock-run -l ttl -d 'Lease time, renewed while the command runs; 100ms to 365 days (e.g. 30s, 2m) [default: 30s]' -r
complete -c redlock-run -s w -l wait -d 'How long to wait for a busy lock or an unreachable Redis: 0 tries once, up to 365 days, or "forever" [default: 0; with --once-id: forever]' -r
complete -c redlock-run -s E -l busy-exit-code -d 'Exit status when the lock is busy (0-255; with 0, busy and waiting are not reported off a terminal) [default: 75]' -r
complete -c redlock-run -l renew-every -d 'Renewal interval, 1ms up to below the ttl [default: ttl/3]' -r
complete -c redlock-run -l kill-after -d 'Grace between SIGTERM and SIGKILL when the command must stop, 0 to 365 days (it must fit in the ttl) [default: ttl/6, at most 5s]' -r
complete -c redlock-run -l on-lost -d 'What to do when the lock is lost while the command runs' -r -f -a "kill\t'SIGTERM the command\'s process group, SIGKILL after --kill-after; exit 79'
keep\t'Warn on stderr and let the command finish without the lock; exit 79'"
complete -c redlock-run -l hold-min -d 'Keep the lock this long after the start even if the command ends sooner (cron de-duplication across hosts whose clocks differ), up to 365 days' -r
complete -c redlock-run -l max-hold -d 'Never hold the lock longer than this (1ms to 365 days): renewals stop and the command is stopped as for a lost lock (see --on-lost), exit 124' -r
complete -c redlock-run -l events -d 'Write lifecycle events as JSON lines to this file (appended), or "-" for stderr' -r -F
complete -c redlock-run -l metrics -d 'Write the run\'s outcome in the Prometheus text format to this file (replaced whole, at the start and the end of the run), for node_exporter\'s textfile collector; one file per lock name' -r -F
complete -c redlock-run -l once-per -d 'Run once per slot of this period (1s to 365 days, e.g. 1m, 1h, 1d) across all hosts: the slot is the Redis server\'s time rounded down to a multiple of PERIOD from the Unix epoch (UTC), whatever the host clocks say. A try whose slot already had a run exiting 0, or whose slot\'s run is in progress, is skipped: busy exit status, silent (said with --verbose); a failed run leaves the slot open for the next try' -r
complete -c redlock-run -l if-vanished -d 'With --once-per: what a slot does when its run vanished (started, then its host or wrapper died, so its end was never recorded). skip: the slot stays closed (it may have succeeded; at most once). rerun: the slot is open again and the next try on any host runs it (a waiting host as soon as the vanished run\'s lease ends), up to --max-attempts starts per slot' -r -f -a "skip\t'It may have succeeded: the slot stays closed (at most once)'
rerun\t'The slot is open again: the next try on any host runs it (at least once, up to `--max-attempts` starts)'"
complete -c redlock-run -l once-id -d 'Run once per ID (e.g. a release tag), across hosts and time: the first run for this name and ID runs the command; runs of the same ID that come meanwhile wait for it (--wait defaults to forever); when it exits 0 they exit 0 without running (one line says who ran it), when it fails one of them runs it (up to --max-attempts, 3); any later run of the ID exits 0 at once. The record is kept --retain. Not with --once-per or --limit' -r
complete -c redlock-run -l max-attempts -d 'With --once-per: the most runs that may start in one slot (failed and vanished ones count); the next try is skipped with the reason attempts_exhausted. Default: 3 with --if-vanished rerun, no limit otherwise' -r
complete -c redlock-run -l limit -d 'Let up to N runs hold the lock at once (a semaphore, 1 to 100): each holds one slot (REDLOCK_SLOT) with its own token, renewals and lost-lock detection. Every run on the name must give the same N. One server, Cluster or Sentinel' -r
complete -c redlock-run -l retain -d 'How long the name\'s fence counter and run history are kept after its last use (1s to 365 days), refreshed by every acquisition and release; a name unused that long leaves nothing in Redis. With --once-per, at least twice the period [default: 30d]' -r
complete -c redlock-run -l history -d 'How many past runs the lock\'s history keeps (`redlock history`, `redlock status`), 0 to 1000; 0 records nothing [default: 20]' -r
complete -c redlock-run -l label -d 'Record TEXT in the holder metadata and the history instead of the command line (for a command whose arguments carry secrets the masking does not know); wins over --hide-args' -r
complete -c redlock-run -l local-dir -d 'Directory of the host-local queue: runs that wait queue here first, and only the first of each host contends in Redis; share one between users to queue them together [env: REDLOCK_LOCAL_DIR] [default: $XDG_RUNTIME_DIR/redlock, else /tmp/redlock-UID]' -r -f -a "(__fish_complete_directories)"
complete -c redlock-run -l tls-insecure-skip-verify -d 'Do not verify the server\'s TLS certificate or name (tests only; warns every run)'
complete -c redlock-run -l fair -d 'Wait in a first-come, first-served queue: the lock goes to the longest waiter, and the waiting line says your place ("you are #2 of 4"). Every run on the name must give --fair. One server, Cluster or Sentinel'
complete -c redlock-run -l hide-args -d 'Record only the program name in the holder metadata, not its arguments'
complete -c redlock-run -l no-local-queue -d 'Wait in Redis directly, without the host-local queue (every waiting run holds a Redis connection) [env: REDLOCK_NO_LOCAL_QUEUE=1|0, true|false, yes|no, on|off]. A flag on the command line wins over both variables; from the same place, this wins over the directory'
complete -c redlock-run -s q -l quiet -d 'Print nothing but errors (no waiting line, no busy note)'
complete -c redlock-run -s v -l verbose -d 'Say what happens: connect retries, acquire, renewals, release'
complete -c redlock-run -s h -l help -d 'Print help (see more with \'--help\')'
complete -c redlock-run -s V -l version -d 'Print version'
