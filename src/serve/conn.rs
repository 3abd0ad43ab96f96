//! A connection's write deadline: an answer must be written within
//! `serve.request_timeout_s` of its first byte, or the connection is cut. Without it a
//! client reading one byte a second keeps its connection, the answer's buffers and a
//! streamed answer's remaining chunks for as long as it likes; with it, a thousand such
//! clients hold the server for one timeout at most, then let go.
//!
//! A cut is a reset, not a close: an answer of unknown length to an HTTP/1.0 client (a
//! proxy such as nginx asks in 1.0 by default) ends where the connection closes, so a
//! close would make a cut answer look whole.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use http_body::{Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Sleep;

/// What the connection's requests tell its stream: a new request began (its answer
/// gets a time of its own), an answer failed midway (the connection is reset).
#[derive(Default)]
pub struct Shared {
    requests: AtomicU64,
    cut: AtomicBool,
}

impl Shared {
    /// hyper handed the connection's next request to the service: the answer before it
    /// is written whole.
    pub fn request(&self) {
        self.requests.fetch_add(1, Ordering::Release);
    }
}

/// A TCP stream whose writes of one answer must end within `limit`.
pub struct WriteDeadline {
    inner: TcpStream,
    limit: Duration,
    shared: Arc<Shared>,
    /// The request whose answer the deadline is for.
    seen: u64,
    /// Armed by the answer's first write.
    deadline: Option<Pin<Box<Sleep>>>,
}

impl WriteDeadline {
    pub fn new(inner: TcpStream, limit: Duration, shared: Arc<Shared>) -> WriteDeadline {
        limit_send_buffer(&inner);
        WriteDeadline {
            inner,
            limit,
            shared,
            seen: 0,
            deadline: None,
        }
    }

    /// An error once the answer's time is up (the waker is set for that moment). `arm`:
    /// bytes are to be written, so the answer's time starts now if it has not (a flush
    /// of nothing, which hyper asks while the answer is still being made, does not).
    fn check(&mut self, cx: &mut Context<'_>, arm: bool) -> io::Result<()> {
        let limit = self.limit;
        let request = self.shared.requests.load(Ordering::Acquire);
        if request != self.seen {
            self.seen = request;
            self.deadline = None;
        }
        if arm && self.deadline.is_none() {
            self.deadline = Some(Box::pin(tokio::time::sleep(limit)));
        }
        let Some(d) = self.deadline.as_mut() else {
            return Ok(());
        };
        match d.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.shared.cut.store(true, Ordering::Release);
                reset_on_close(&self.inner);
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client did not read the answer within serve.request_timeout_s",
                ))
            }
            Poll::Pending => Ok(()),
        }
    }
}

/// An answer's body that marks its connection cut when it fails midway.
pub struct Watched {
    inner: Body,
    shared: Arc<Shared>,
}

impl Watched {
    pub fn new(inner: Body, shared: Arc<Shared>) -> Watched {
        Watched { inner, shared }
    }
}

impl http_body::Body for Watched {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        let r = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(r, Poll::Ready(Some(Err(_)))) {
            self.shared.cut.store(true, Ordering::Release);
        }
        r
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Makes the socket's close a reset (SO_LINGER 0): the client sees the answer cut.
pub(super) fn reset_on_close(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    let linger = libc::linger {
        l_onoff: 1,
        l_linger: 0,
    };
    // SAFETY: a valid socket, the option's own struct and size.
    let _ = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            &linger as *const libc::linger as *const libc::c_void,
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        )
    };
}

/// Bytes of an answer the kernel holds for a client that has not read them: without a
/// bound it grows them to 4 MiB a connection (`tcp_wmem`), so a whole large answer went
/// into it, the write never waited, the deadline never applied, and a thousand clients
/// that never read held gigabytes. 256 KiB: 20 MB/s to a client 12 ms away.
const SEND_BUFFER: libc::c_int = 256 << 10;

fn limit_send_buffer(s: &TcpStream) {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid socket, an int option of the size given.
    let _ = unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            &SEND_BUFFER as *const libc::c_int as *const libc::c_void,
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
}

impl Drop for WriteDeadline {
    fn drop(&mut self) {
        if self.shared.cut.load(Ordering::Acquire) {
            reset_on_close(&self.inner);
        }
    }
}

impl AsyncRead for WriteDeadline {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for WriteDeadline {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.check(cx, !buf.is_empty())?;
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        self.check(cx, bufs.iter().any(|b| !b.is_empty()))?;
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        self.check(cx, false)?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.shared.cut.load(Ordering::Acquire) {
            // No FIN after a cut answer: the reset comes when the socket is dropped.
            reset_on_close(&self.inner);
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::poll_fn;
    use std::io::{Read, Write};
    use std::time::Instant;

    impl WriteDeadline {
        async fn write_all(&mut self, mut b: &[u8]) -> io::Result<()> {
            while !b.is_empty() {
                let n = poll_fn(|cx| Pin::new(&mut *self).poll_write(cx, b)).await?;
                b = &b[n..];
            }
            Ok(())
        }

        async fn read_exact(&mut self, b: &mut [u8]) -> io::Result<()> {
            let mut got = 0;
            while got < b.len() {
                let mut buf = ReadBuf::new(&mut b[got..]);
                poll_fn(|cx| Pin::new(&mut *self).poll_read(cx, &mut buf)).await?;
                let n = buf.filled().len();
                if n == 0 {
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                got += n;
            }
            Ok(())
        }
    }

    async fn pair(limit: Duration) -> (WriteDeadline, std::net::TcpStream, Arc<Shared>) {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().await.unwrap();
        let shared = Arc::new(Shared::default());
        (WriteDeadline::new(s, limit, shared.clone()), client, shared)
    }

    #[tokio::test]
    async fn an_answer_the_client_does_not_read_is_cut_at_the_deadline() {
        let (mut w, mut client, _) = pair(Duration::from_millis(300)).await;
        let t = Instant::now();
        let chunk = vec![b'x'; 64 << 10];
        let err = loop {
            if let Err(e) = w.write_all(&chunk).await {
                break e;
            }
            assert!(t.elapsed() < Duration::from_secs(5), "never cut");
        };
        assert_eq!(err.kind(), io::ErrorKind::TimedOut);
        assert!(t.elapsed() >= Duration::from_millis(300));
        // The client, reading at last, finds the connection reset, not closed: an
        // answer without a length must not look whole.
        drop(w);
        let mut buf = vec![0u8; 1 << 20];
        let end = loop {
            match client.read(&mut buf) {
                Ok(0) => break None,
                Ok(_) => continue,
                Err(e) => break Some(e.kind()),
            }
        };
        assert_eq!(end, Some(io::ErrorKind::ConnectionReset));
    }

    #[tokio::test]
    async fn each_request_gives_its_answer_a_time_of_its_own() {
        let (mut w, mut client, shared) = pair(Duration::from_millis(300)).await;
        // An answer read at once, then a pause longer than the limit on a kept-alive
        // connection, then the next request and its answer.
        for _ in 0..2 {
            w.write_all(b"answer").await.unwrap();
            let mut got = [0u8; 6];
            client.read_exact(&mut got).unwrap();
            tokio::time::sleep(Duration::from_millis(400)).await;
            client.write_all(b"next").unwrap();
            let mut req = [0u8; 4];
            w.read_exact(&mut req).await.unwrap();
            shared.request();
        }
        // Bytes from the client do not give an answer more time; a new request does.
        w.write_all(b"answer").await.unwrap();
        client.write_all(b"x").unwrap();
        let mut x = [0u8; 1];
        w.read_exact(&mut x).await.unwrap();
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert!(w.write_all(b"late").await.is_err());
        let (mut w, mut client, shared) = pair(Duration::from_millis(300)).await;
        shared.request();
        // A large answer the client reads as it comes ends within the limit too.
        let reader = std::thread::spawn(move || {
            let mut n = 0;
            let mut buf = [0u8; 65536];
            while n < 4 << 20 {
                n += client.read(&mut buf).unwrap();
            }
        });
        w.write_all(&vec![b'y'; 4 << 20]).await.unwrap();
        reader.join().unwrap();
    }
}
