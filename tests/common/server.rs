//! `tidemark serve` started by a test: on port 0, its address read from its `--json`
//! line, stopped (SIGTERM) when dropped; its log kept for failure messages.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

/// A running server.
pub struct Server {
    child: Child,
    /// `http://127.0.0.1:PORT`
    pub base: String,
    /// `127.0.0.1:PORT`
    pub addr: String,
    log: Arc<Mutex<String>>,
}

impl Server {
    /// Starts `tidemark --db DB [extra…] serve --listen 127.0.0.1:0 --json [args…]`.
    pub fn start(db: &Path, extra: &[&str], args: &[&str]) -> Server {
        Server::start_with_env(db, extra, args, &[])
    }

    /// The same with environment variables set (the tests' hooks).
    pub fn start_with_env(
        db: &Path,
        extra: &[&str],
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Server {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_tidemark"));
        cmd.arg("--db").arg(db).args(extra);
        cmd.envs(env.iter().copied());
        cmd.args(["serve", "--listen", "127.0.0.1:0", "--json"])
            .args(args);
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("start tidemark serve");
        let log = Arc::new(Mutex::new(String::new()));
        let mut err = child.stderr.take().unwrap();
        let l2 = log.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf) {
                if n == 0 {
                    break;
                }
                l2.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(line.trim()).unwrap_or_else(|e| {
            std::thread::sleep(std::time::Duration::from_millis(200));
            panic!(
                "no listen line ({e}): {line:?}; log: {}",
                log.lock().unwrap()
            )
        });
        let addr = v["listen"].as_str().unwrap().to_string();
        Server {
            child,
            base: format!("http://{addr}"),
            addr,
            log,
        }
    }

    /// What the server logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// GET a path: (status, content type, body).
    pub fn get(&self, path: &str) -> (u16, String, Vec<u8>) {
        request(ureq::get(&format!("{}{path}", self.base)))
    }

    /// GET a path and parse its body as JSON, asserting 200.
    pub fn json(&self, path: &str) -> serde_json::Value {
        serde_json::from_str(&self.text(path))
            .unwrap_or_else(|e| panic!("GET {path}: not JSON: {e}"))
    }

    /// GET a path as text, asserting 200.
    pub fn text(&self, path: &str) -> String {
        let (status, _, body) = self.get(path);
        assert_eq!(
            status,
            200,
            "GET {path}: {}",
            String::from_utf8_lossy(&body)
        );
        String::from_utf8(body).unwrap()
    }

    /// Sends SIGTERM and waits: the exit status.
    pub fn stop(mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        self.child.wait().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends a request: (status, content type, body), whatever the status.
pub fn request(req: ureq::Request) -> (u16, String, Vec<u8>) {
    answer(req.call())
}

/// Sends a request with a body: (status, content type, body), whatever the status.
#[allow(dead_code)]
pub fn request_with_body(req: ureq::Request, body: &[u8]) -> (u16, String, Vec<u8>) {
    answer(req.send_bytes(body))
}

fn answer(sent: Result<ureq::Response, ureq::Error>) -> (u16, String, Vec<u8>) {
    let resp = match sent {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("request failed: {e}"),
    };
    let status = resp.status();
    let ct = resp.content_type().to_string();
    let mut body = Vec::new();
    resp.into_reader().read_to_end(&mut body).unwrap();
    (status, ct, body)
}

/// Percent-encodes a query value.
pub fn enc(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What a Python `script` prints (JSON) given `input` on its standard input; its
/// failure fails the test, with what it said.
pub fn python_json(python: &str, script: &str, input: &str) -> serde_json::Value {
    use std::io::Write;
    let mut child = std::process::Command::new(python)
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}\n(input:\n{input})",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The Python of the test environment (`tools/pyenv.sh`), or a loud skip.
pub fn python() -> Option<String> {
    match std::env::var("TIDEMARK_PYTHON") {
        Ok(p) if Path::new(&p).exists() => Some(p),
        _ => {
            // CI installs it (tools/test.sh): there a missing client is a failure.
            assert!(
                std::env::var_os("CI").is_none(),
                "TIDEMARK_PYTHON is not set in CI: tools/test.sh should have created the Python environment"
            );
            eprintln!("SKIPPED: TIDEMARK_PYTHON is not set (run the tests with bash tools/test.sh, which creates the Python environment with pywb and cdx_toolkit)");
            None
        }
    }
}

/// pywb's `wayback` (from the test environment's Python) serving the `config.yaml` of
/// `work` on a free port; killed when dropped.
pub struct Pywb {
    child: Child,
    /// `http://127.0.0.1:PORT`
    pub base: String,
}

impl Pywb {
    /// Starts it and waits until it accepts connections (60 s at most).
    pub fn start(python: &str, work: &Path) -> Pywb {
        let port = free_port();
        let wayback = Path::new(python).parent().unwrap().join("wayback");
        let mut child = Command::new(&wayback)
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .current_dir(work)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start pywb's wayback");
        let started = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(child.try_wait().unwrap().is_none(), "pywb exited at start");
            assert!(
                started.elapsed() < std::time::Duration::from_secs(60),
                "pywb did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        Pywb {
            child,
            base: format!("http://127.0.0.1:{port}"),
        }
    }
}

impl Drop for Pywb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port free now on 127.0.0.1.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// (status, headers, body) of a request that does not follow redirects.
pub fn no_follow(url: &str, headers: &[(&str, &str)]) -> (u16, Vec<(String, String)>, Vec<u8>) {
    let agent = ureq::AgentBuilder::new().redirects(0).build();
    let mut req = agent.get(url);
    for (k, v) in headers {
        req = req.set(k, v);
    }
    let resp = match req.call() {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{url}: {e}"),
    };
    let hs = resp
        .headers_names()
        .iter()
        .flat_map(|n| {
            resp.all(n)
                .into_iter()
                .map(|v| (n.to_ascii_lowercase(), v.to_string()))
                .collect::<Vec<_>>()
        })
        .collect();
    let status = resp.status();
    let mut body = Vec::new();
    resp.into_reader().read_to_end(&mut body).unwrap();
    (status, hs, body)
}
