//! A loopback HTTP server for the fetchers' tests (the data crate's and the CLI's): it answers
//! `GET /PATH` from a folder, with 404 for a missing file.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::PathBuf;

/// Serves `root` on a free loopback port for `n` requests, in a background thread; returns the
/// base URL (`http://127.0.0.1:PORT`). Panics when no port can be bound (tests only).
pub fn serve(root: PathBuf, n: usize) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(n) {
            let mut s = stream.unwrap();
            let mut reader = BufReader::new(&s);
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            // Read the headers up to the blank line before answering.
            let mut header = String::new();
            while reader.read_line(&mut header).unwrap_or(0) > 2 {
                header.clear();
            }
            let path = line
                .split_whitespace()
                .nth(1)
                .unwrap_or("/")
                .trim_start_matches('/');
            let (status, body) = match std::fs::read(root.join(path)) {
                Ok(b) => ("200 OK", b),
                Err(_) => ("404 Not Found", b"missing".to_vec()),
            };
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = s.write_all(head.as_bytes());
            let _ = s.write_all(&body);
        }
    });
    format!("http://{addr}")
}
