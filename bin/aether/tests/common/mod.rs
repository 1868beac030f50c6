//! Helpers shared by the CLI's test files.
#![allow(dead_code)]

use std::process::{Command, Output};

/// A command's standard output, as text.
pub fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A command's standard error, as text.
pub fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The state the job history holds for a cluster aether made.
pub fn cluster_state(db: &rusqlite::Connection, cluster_id: &str) -> String {
    db.query_row(
        "SELECT state FROM clusters WHERE cluster_id = ?1",
        [cluster_id],
        |r| r.get(0),
    )
    .unwrap_or_else(|e| panic!("cluster {cluster_id} in the history: {e}"))
}

/// A moto server (S3, EMR, …) on a free loopback port, stopped on drop.
pub struct Moto {
    pub child: std::process::Child,
    pub endpoint: String,
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn start_moto() -> Moto {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut moto = Command::new("moto_server")
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map(|child| Moto {
            child,
            endpoint: format!("http://127.0.0.1:{port}"),
        })
        .expect("moto_server (pip install 'moto[server]') must be installed: .ci/run installs it");
    for _ in 0..200 {
        if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
            return moto;
        }
        if let Ok(Some(status)) = moto.child.try_wait() {
            panic!("moto_server exited early: {status}");
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    panic!("moto_server did not start on port {port}");
}
