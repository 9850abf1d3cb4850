//! A real `redis-server` for the store's tests, on a free loopback port,
//! stopped (killed) when dropped. A missing `redis-server` fails the test:
//! CI installs it (.ci/run).

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Redis {
    pub port: u16,
    child: Option<Child>,
}

impl Redis {
    /// Starts one on a free port and waits (at most 5 s) until it listens.
    pub fn start() -> Redis {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let mut r = Redis { port, child: None };
        r.restart();
        r
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// Kills the server (connections drop at once).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port (empty: no persistence).
    pub fn restart(&mut self) {
        self.stop();
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server must be installed (apt-get install -y redis-server; .ci/run does)");
        self.child = Some(child);
        let t0 = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(t0.elapsed() < Duration::from_secs(5), "redis-server did not listen on {} within 5 s", self.port);
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        self.stop();
    }
}
