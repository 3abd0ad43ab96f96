//! `serve.max_connections` and `serve.max_connections_per_client`: the connections the
//! server holds at once, in all and from one client. Without them a crowd of idle or
//! slow connections (a thousand clients that each open one and read a byte a second, or
//! one client that opens a thousand) holds a file descriptor, a task and buffers each
//! for as long as the timeouts allow, and the next connection fails in `accept` when
//! descriptors run out — for everyone.
//!
//! A connection over either cap gets a `503` at once (`{"code":
//! "too_many_connections"}`, `Retry-After: 1`, `Connection: close`), written without
//! reading its request, and is closed within a second; past [`MAX_REFUSING`] refusals
//! under way, one more is reset at once (a flood of refused connections must not hold
//! descriptors either). A client is an IPv4 address or an IPv6 /64 (what one host is
//! usually given); a trusted front end (`serve.trusted_proxies`) speaks for many
//! readers: it counts only against the overall cap, and an eighth of that is kept for
//! it, so that a crowd of other clients cannot shut it out.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::Semaphore;

use super::error::ApiError;
use crate::access::TrustedProxies;

/// Counts the connections held; [`Gate::admit`] lets one more in or says which cap it
/// is over.
pub struct Gate {
    max_total: usize,
    max_per_client: usize,
    trusted: TrustedProxies,
    held: Mutex<Held>,
    refused: AtomicU64,
    refusing: Arc<Semaphore>,
}

/// Refusals answered at once; past them a refused connection is reset without an
/// answer.
pub const MAX_REFUSING: usize = 256;

#[derive(Default)]
struct Held {
    total: usize,
    /// Connections from clients other than trusted proxies.
    untrusted: usize,
    by_client: HashMap<IpAddr, usize>,
}

/// Which cap a refused connection was over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Over {
    /// `serve.max_connections`.
    Total,
    /// `serve.max_connections_per_client`.
    PerClient,
}

/// One admitted connection: counted until dropped.
pub struct Ticket {
    gate: Arc<Gate>,
    client: Option<IpAddr>,
}

impl Drop for Ticket {
    fn drop(&mut self) {
        let mut held = self.gate.held.lock().unwrap_or_else(|p| p.into_inner());
        held.total = held.total.saturating_sub(1);
        if let Some(c) = self.client {
            held.untrusted = held.untrusted.saturating_sub(1);
            if let Some(n) = held.by_client.get_mut(&c) {
                *n -= 1;
                if *n == 0 {
                    held.by_client.remove(&c);
                }
            }
        }
    }
}

impl Gate {
    /// A gate with the given caps (each at least 1).
    pub fn new(max_total: usize, max_per_client: usize, trusted: TrustedProxies) -> Arc<Gate> {
        Arc::new(Gate {
            max_total,
            max_per_client,
            trusted,
            held: Mutex::new(Held::default()),
            refused: AtomicU64::new(0),
            refusing: Arc::new(Semaphore::new(MAX_REFUSING)),
        })
    }

    /// Lets a connection from `peer` in, or says which cap it is over.
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Result<Ticket, Over> {
        let client = (!self.trusted.trusts(peer)).then(|| client_of(peer));
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if held.total >= self.max_total {
            return Err(Over::Total);
        }
        if let Some(c) = client {
            // An eighth of the connections kept for trusted proxies.
            if held.untrusted >= self.max_total - self.max_total / 8 {
                return Err(Over::Total);
            }
            let n = held.by_client.entry(c).or_insert(0);
            if *n >= self.max_per_client {
                return Err(Over::PerClient);
            }
            *n += 1;
            held.untrusted += 1;
        }
        held.total += 1;
        Ok(Ticket {
            gate: self.clone(),
            client,
        })
    }

    /// Connections held now.
    #[cfg(test)]
    fn held(&self) -> usize {
        self.held.lock().unwrap_or_else(|p| p.into_inner()).total
    }

    /// Answers a connection over a cap with a 503 and closes it, within a second (past
    /// [`MAX_REFUSING`] under way, resets it at once); the first refusal and every
    /// thousandth are logged.
    pub fn refuse(&self, stream: TcpStream, peer: IpAddr, over: Over) {
        let n = self.refused.fetch_add(1, Ordering::Relaxed) + 1;
        let (setting, cap) = match over {
            Over::Total => ("serve.max_connections", self.max_total),
            Over::PerClient => ("serve.max_connections_per_client", self.max_per_client),
        };
        if n == 1 || n % 1000 == 0 {
            eprintln!(
                "tidemark serve: refused a connection from {peer}: over {setting} ({cap}); {n} refused so far"
            );
        }
        let message = match over {
            Over::Total => format!("the server holds {cap} connections ({setting}): try again"),
            Over::PerClient => {
                format!("this client holds {cap} connections already ({setting}): try again")
            }
        };
        match self.refusing.clone().try_acquire_owned() {
            Ok(permit) => {
                tokio::spawn(async move {
                    answer_503(stream, message).await;
                    drop(permit);
                });
            }
            Err(_) => super::conn::reset_on_close(&stream),
        }
    }
}

/// File descriptors the index and its files need beside the connections (and the
/// refusals under way).
const DESCRIPTORS_BESIDE: u64 = 1024 + MAX_REFUSING as u64;

/// Raises the soft limit of open files to hold `max_connections` connections and the
/// index's files beside them (as far as the hard limit allows; Debian's soft limit is
/// 1,024): at the limit `accept` fails for everyone, where the cap refuses one client
/// with an answer. Says so when the hard limit is lower.
pub fn allow_descriptors(max_connections: usize) {
    let want = max_connections as u64 + DESCRIPTORS_BESIDE;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read and write the one struct given.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 || lim.rlim_cur >= want {
            return;
        }
        let raised = libc::rlimit {
            rlim_cur: want.min(lim.rlim_max),
            rlim_max: lim.rlim_max,
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
            lim = raised;
        }
    }
    if lim.rlim_cur < want {
        eprintln!(
            "tidemark serve: open files limited to {} (ulimit -n), fewer than serve.max_connections ({max_connections}) and the index's files need ({want}): connections beyond fail in accept",
            lim.rlim_cur
        );
    }
}

/// The client a connection from `peer` counts against: an IPv4 address, or the /64 of
/// an IPv6 one.
fn client_of(peer: IpAddr) -> IpAddr {
    match peer.to_canonical() {
        IpAddr::V6(v6) => IpAddr::V6((u128::from(v6) & !((1u128 << 64) - 1)).into()),
        v4 => v4,
    }
}

/// Writes the refusal (one write) and closes. The request is not read, but what the
/// client sent is drained for a moment after: a close with unread bytes is a reset,
/// which can destroy the answer before the client reads it. A client that sends its
/// request later than that may see the reset instead of the answer.
async fn answer_503(mut stream: TcpStream, message: String) {
    let body = ApiError {
        code: "too_many_connections",
        ..ApiError::unavailable(message)
    }
    .json();
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ndate: {}\r\ncontent-type: application/json; charset=utf-8\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        chrono::Utc::now().format("%a, %d %b %Y %H:%M:%S GMT"),
        body.len()
    );
    let written = async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await
    };
    if let Ok(Ok(())) = tokio::time::timeout(Duration::from_millis(750), written).await {
        let drained = async {
            let mut sink = [0u8; 4096];
            while stream.read(&mut sink).await? > 0 {}
            Ok::<(), std::io::Error>(())
        };
        let _ = tokio::time::timeout(Duration::from_millis(250), drained).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn caps_count_per_client_and_in_all_and_tickets_give_back() {
        let trusted = TrustedProxies::parse(&["10.0.0.1".to_string()]).unwrap();
        let g = Gate::new(5, 2, trusted);
        let a1 = g.admit(ip("192.0.2.1")).unwrap();
        let a2 = g.admit(ip("192.0.2.1")).unwrap();
        assert_eq!(g.admit(ip("192.0.2.1")).err(), Some(Over::PerClient));
        // The same address mapped into IPv6 is the same client.
        assert_eq!(g.admit(ip("::ffff:192.0.2.1")).err(), Some(Over::PerClient));
        // One /64 is one client.
        let b1 = g.admit(ip("2001:db8::1")).unwrap();
        let b2 = g.admit(ip("2001:db8::2")).unwrap();
        assert_eq!(g.admit(ip("2001:db8::3")).err(), Some(Over::PerClient));
        let t1 = g.admit(ip("10.0.0.1")).unwrap();
        assert_eq!(g.held(), 5);
        // Over the overall cap, even a trusted proxy is refused.
        assert_eq!(g.admit(ip("10.0.0.1")).err(), Some(Over::Total));
        drop((a1, a2, b1, b2));
        assert_eq!(g.held(), 1);
        // A trusted proxy is not held to the per-client cap.
        let more: Vec<_> = (0..3).map(|_| g.admit(ip("10.0.0.1")).unwrap()).collect();
        assert_eq!(g.held(), 4);
        drop((t1, more));
        assert_eq!(g.held(), 0);
        assert!(g.held.lock().unwrap().by_client.is_empty());
    }

    #[test]
    fn an_eighth_is_kept_for_trusted_proxies() {
        let trusted = TrustedProxies::parse(&["10.0.0.1".to_string()]).unwrap();
        let g = Gate::new(16, 100, trusted);
        let others: Vec<_> = (0..14).map(|_| g.admit(ip("192.0.2.1")).unwrap()).collect();
        assert_eq!(g.admit(ip("192.0.2.2")).err(), Some(Over::Total));
        let front: Vec<_> = (0..2).map(|_| g.admit(ip("10.0.0.1")).unwrap()).collect();
        assert_eq!(g.admit(ip("10.0.0.1")).err(), Some(Over::Total));
        drop(others);
        assert_eq!(g.held(), 2);
        drop(front);
        assert_eq!(g.held(), 0);
    }
}
