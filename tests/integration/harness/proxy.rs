//! A TCP proxy between some clients and one Redis, switchable while they talk: the
//! network faults of the nemesis (a blackhole, replies dropped, connections reset,
//! latency, a failover to another server) without root, `tc` or iptables.
//!
//! Every accepted connection gets its own upstream connection and two pump threads.
//! Bytes a fault swallows are gone, as through a real blackhole; a connection that
//! lost bytes would be out of step with the RESP stream it carries, so healing
//! ([`Proxy::pass`]) closes exactly those connections, as the peer's TCP stack would
//! once its retransmissions gave up. It does not: reorder, duplicate or corrupt.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the proxy does with the bytes it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Forward both ways.
    Pass,
    /// Forward nothing either way, hold every connection open, accept new ones.
    Blackhole,
    /// Forward requests, swallow replies: the server acts, the client never hears.
    DropReplies,
    /// Forward both ways until a request contains these bytes (`EVALSHA`: a run's
    /// first script, after its first try's plain reads), then swallow replies, that
    /// request's first, as [`Mode::DropReplies`].
    DropRepliesFrom(&'static str),
    /// Forward both ways, each chunk after this delay.
    Latency(Duration),
    /// Forward both ways, but hold the first request that contains these bytes (a
    /// script's SHA1, say) this long, and the connection behind it; then pass: Redis
    /// or the network stalls for a while on that one call.
    DelayMatching(&'static str, Duration),
}

struct Conn {
    client: TcpStream,
    upstream: TcpStream,
    /// Bytes were swallowed: the RESP stream is out of step, close it on healing.
    lost_bytes: AtomicBool,
    closed: AtomicBool,
    /// The last bytes forwarded were the client's (a request not yet answered).
    asking: AtomicBool,
}

impl Conn {
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let _ = self.client.shutdown(Shutdown::Both);
        let _ = self.upstream.shutdown(Shutdown::Both);
    }
}

struct Shared {
    mode: Mutex<Mode>,
    upstream: AtomicU16,
    conns: Mutex<Vec<Arc<Conn>>>,
    stopping: AtomicBool,
    /// Requests that followed a reply (or opened a connection): the round trips
    /// of clients that wait for each reply, however the bytes were split.
    round_trips: AtomicUsize,
}

/// A loopback proxy to one Redis port (see the module header).
pub struct Proxy {
    pub port: u16,
    shared: Arc<Shared>,
}

impl Proxy {
    /// A proxy in [`Mode::Pass`] to `127.0.0.1:upstream`.
    pub fn start(upstream: u16) -> Proxy {
        let listener = super::server::fresh_listener();
        let port = listener.local_addr().unwrap().port();
        let shared = Arc::new(Shared {
            mode: Mutex::new(Mode::Pass),
            upstream: AtomicU16::new(upstream),
            conns: Mutex::new(Vec::new()),
            stopping: AtomicBool::new(false),
            round_trips: AtomicUsize::new(0),
        });
        let accepting = shared.clone();
        std::thread::spawn(move || accept_loop(listener, accepting));
        Proxy { port, shared }
    }

    /// `redis://127.0.0.1:<proxy port>`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Switches the mode for every connection, open or future.
    pub fn set(&self, mode: Mode) {
        *self.shared.mode.lock().unwrap() = mode;
    }

    /// The round trips the clients made through the proxy so far.
    pub fn round_trips(&self) -> usize {
        self.shared.round_trips.load(Ordering::SeqCst)
    }

    /// Heals: forward again, and close the connections that lost bytes.
    pub fn pass(&self) {
        self.set(Mode::Pass);
        for conn in self.shared.conns.lock().unwrap().iter() {
            if conn.lost_bytes.load(Ordering::SeqCst) {
                conn.close();
            }
        }
    }

    /// Closes every open connection (both sides see the connection end).
    pub fn reset(&self) {
        for conn in self.shared.conns.lock().unwrap().iter() {
            conn.close();
        }
    }

    /// Points new connections at another server and closes the open ones (a failover
    /// behind a stable address).
    pub fn switch_to(&self, upstream: u16) {
        self.shared.upstream.store(upstream, Ordering::SeqCst);
        self.reset();
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        self.reset();
    }
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    for client in listener.incoming() {
        if shared.stopping.load(Ordering::SeqCst) {
            return;
        }
        let Ok(client) = client else { continue };
        let port = shared.upstream.load(Ordering::SeqCst);
        let Ok(upstream) = TcpStream::connect(("127.0.0.1", port)) else {
            // The server is down: the client sees its connection refused-like close.
            continue;
        };
        let _ = client.set_nodelay(true);
        let _ = upstream.set_nodelay(true);
        let conn = Arc::new(Conn {
            client: client.try_clone().expect("clone"),
            upstream: upstream.try_clone().expect("clone"),
            lost_bytes: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            asking: AtomicBool::new(false),
        });
        {
            let mut conns = shared.conns.lock().unwrap();
            conns.retain(|c| !c.closed.load(Ordering::SeqCst));
            conns.push(conn.clone());
        }
        for downstream in [false, true] {
            let (from, to) = if downstream {
                (upstream.try_clone(), client.try_clone())
            } else {
                (client.try_clone(), upstream.try_clone())
            };
            let (Ok(from), Ok(to)) = (from, to) else {
                conn.close();
                break;
            };
            let (shared, conn) = (shared.clone(), conn.clone());
            std::thread::spawn(move || pump(from, to, downstream, &shared, &conn));
        }
    }
}

/// Copies one direction until either side closes, applying the mode to each chunk.
fn pump(mut from: TcpStream, mut to: TcpStream, downstream: bool, shared: &Shared, conn: &Conn) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let mode = *shared.mode.lock().unwrap();
        let forward = match mode {
            Mode::Pass => true,
            Mode::Blackhole => false,
            Mode::DropReplies => !downstream,
            Mode::DropRepliesFrom(text) => {
                let needle = text.as_bytes();
                if !downstream && buf[..n].windows(needle.len()).any(|w| w == needle) {
                    *shared.mode.lock().unwrap() = Mode::DropReplies;
                }
                true
            }
            Mode::Latency(delay) => {
                std::thread::sleep(delay);
                true
            }
            Mode::DelayMatching(text, delay) => {
                let chunk = &buf[..n];
                let needle = text.as_bytes();
                if !downstream && chunk.windows(needle.len()).any(|w| w == needle) {
                    *shared.mode.lock().unwrap() = Mode::Pass;
                    std::thread::sleep(delay);
                }
                true
            }
        };
        if !forward {
            conn.lost_bytes.store(true, Ordering::SeqCst);
            continue;
        }
        let was_asking = conn.asking.swap(!downstream, Ordering::SeqCst);
        if !downstream && !was_asking {
            shared.round_trips.fetch_add(1, Ordering::SeqCst);
        }
        if to.write_all(&buf[..n]).is_err() {
            break;
        }
    }
    conn.close();
}
