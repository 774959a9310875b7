//! The authenticated kubelet API through the real API server: `kubectl logs` and `logs -f`,
//! `exec` (exit code, stdin, and `-it` through a pseudo-terminal), `attach`, `port-forward`
//! carrying an HTTP request, and `kubectl top` through metrics-server; a client without
//! credentials, and one whose identity may not reach the node, are refused by the node itself.

use crate::cluster::{assert_never_forbidden, busybox_pod, cluster, shared};
use crate::harness::NodeOptions;
use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The lines `reader` produces, read on a thread of their own so a test can wait for one with
/// a timeout instead of blocking on a stream that may never deliver.
pub fn lines_of(reader: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(reader).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

/// Waits up to `timeout` for a line of `lines` containing `needle`; returns the lines seen.
pub fn wait_line(lines: &mpsc::Receiver<String>, needle: &str, timeout: Duration) -> Vec<String> {
    let deadline = std::time::Instant::now() + timeout;
    let mut seen = Vec::new();
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        match lines.recv_timeout(left) {
            Ok(line) => {
                let found = line.contains(needle);
                seen.push(line);
                if found {
                    return seen;
                }
            }
            Err(_) => break,
        }
    }
    panic!("no line with {needle:?} within {timeout:?}; saw {seen:?}");
}

#[test]
fn kubectl_logs_exec_port_forward_and_top_reach_the_node() {
    let _up = shared();
    let c = cluster();
    let ns = c.namespace("t-kapi");
    let node = c.join("c-kapi", NodeOptions::default());
    c.wait_node_ready(&node);
    c.apply(&busybox_pod(
        &ns,
        "web",
        &node.name,
        "  terminationGracePeriodSeconds: 1\n",
        "",
        "echo hello-from-the-log; exec httpd -f -p 8080 -h /etc",
    ));
    c.wait_pod_phase(&node, &ns, "web", "Running");

    let mut last_answer = String::new();
    let logs = c.wait_for(&node, "kubectl logs", Duration::from_secs(60), || {
        let out = c.kubectl(&["-n", &ns, "logs", "web"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let answer = format!(
            "{:?}: {text:?} {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        if answer != last_answer {
            // Shown with the failure: what kubectl said each time its answer changed.
            eprintln!("kubectl logs: {answer}");
            last_answer = answer;
        }
        text.contains("hello-from-the-log").then_some(text)
    });
    assert_eq!(logs.trim(), "hello-from-the-log");

    // logs -f: what the container writes later arrives on the open stream.
    let mut follower = c.kubectl_spawn(&["-n", &ns, "logs", "-f", "web"]);
    let followed = lines_of(follower.stdout.take().expect("stdout"));
    wait_line(&followed, "hello-from-the-log", Duration::from_secs(30));
    let wrote = c.kubectl(&[
        "-n",
        &ns,
        "exec",
        "web",
        "--",
        "sh",
        "-c",
        "echo written-later >/proc/1/fd/1",
    ]);
    assert!(wrote.status.success(), "{wrote:?}");
    wait_line(&followed, "written-later", Duration::from_secs(30));
    let _ = follower.kill();
    let _ = follower.wait();

    let exec = c.kubectl(&[
        "-n",
        &ns,
        "exec",
        "web",
        "--",
        "sh",
        "-c",
        "echo exec-ok; exit 3",
    ]);
    assert_eq!(String::from_utf8_lossy(&exec.stdout).trim(), "exec-ok");
    assert_eq!(exec.status.code(), Some(3), "{exec:?}");
    let piped = c.kubectl_stdin(
        &["-n", &ns, "exec", "-i", "web", "--", "cat"],
        Some("through stdin\n"),
    );
    assert!(piped.status.success(), "{piped:?}");
    assert_eq!(String::from_utf8_lossy(&piped.stdout), "through stdin\n");

    // exec -it: a TTY end to end. `script` gives kubectl a pseudo-terminal of its own, as a
    // user's shell would; the remote side must see a terminal too.
    let command = format!(
        "{} --kubeconfig {} -n {ns} exec -it web -- sh -c 'tty; read line; echo got-$line; exit 7'",
        c.kubectl_path().display(),
        c.dir.join("admin.kubeconfig").display(),
    );
    let mut tty = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("script");
    {
        use std::io::Write;
        let mut stdin = tty.stdin.take().expect("stdin");
        // Give kubectl time to put its terminal in raw mode before typing.
        std::thread::sleep(Duration::from_secs(2));
        stdin.write_all(b"typed\r").expect("type into the terminal");
        // Dropping stdin would end the session early: script turns EOF into ^D.
        let tty_out = lines_of(tty.stdout.take().expect("stdout"));
        let seen = wait_line(&tty_out, "got-typed", Duration::from_secs(30));
        assert!(
            seen.iter().any(|l| l.contains("/dev/pts/")),
            "the exec had no terminal: {seen:?}"
        );
        drop(stdin);
    }
    let status = tty.wait().expect("script exits");
    assert_eq!(status.code(), Some(7), "exec -it exit code");

    // attach: stdin to the container's main process, its output back.
    c.apply(&busybox_pod(
        &ns,
        "attached",
        &node.name,
        "  terminationGracePeriodSeconds: 1\n  restartPolicy: Never\n",
        "    stdin: true\n    stdinOnce: true\n",
        "while read line; do echo attached-got-$line; done",
    ));
    c.wait_pod_phase(&node, &ns, "attached", "Running");
    let attach = c.kubectl_stdin(
        &["-n", &ns, "attach", "-i", "attached", "-c", "main"],
        Some("ping\n"),
    );
    assert!(
        String::from_utf8_lossy(&attach.stdout).contains("attached-got-ping"),
        "{attach:?}"
    );
    // stdinOnce: the container's stdin closed with the attach, so its loop ended.
    c.wait_pod_phase(&node, &ns, "attached", "Succeeded");

    // port-forward: an HTTP request to busybox httpd in the pod, through the API server.
    let mut forward = c.kubectl_spawn(&["-n", &ns, "port-forward", "pod/web", ":8080"]);
    let mut stdout = std::io::BufReader::new(forward.stdout.take().expect("stdout"));
    let mut line = String::new();
    std::io::BufRead::read_line(&mut stdout, &mut line).expect("port-forward output");
    // "Forwarding from 127.0.0.1:PORT -> 8080"
    let port: u16 = line
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no local port in {line:?}"));
    let body = {
        use std::io::{Read, Write};
        let mut conn = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        conn.set_read_timeout(Some(Duration::from_secs(10))).ok();
        conn.write_all(b"GET /hostname HTTP/1.0\r\n\r\n")
            .expect("request");
        let mut answer = String::new();
        let _ = conn.read_to_string(&mut answer);
        answer
    };
    let _ = forward.kill();
    let _ = forward.wait();
    assert!(
        body.starts_with("HTTP/1.0 200") || body.starts_with("HTTP/1.1 200"),
        "{body}"
    );

    // kubectl top, once metrics-server has scraped the node's /metrics/resource.
    c.wait_for(&node, "kubectl top node", Duration::from_secs(240), || {
        let out = c.kubectl(&["top", "node", &node.name, "--no-headers"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.success() && text.starts_with(node.name.as_str())).then_some(text)
    });
    c.wait_for(&node, "kubectl top pod", Duration::from_secs(240), || {
        let out = c.kubectl(&["-n", &ns, "top", "pod", "web", "--no-headers"]);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        (out.status.success() && text.starts_with("web")).then_some(text)
    });

    // The node itself: no credentials is 401, whatever the path.
    let port = node.secure_port.expect("secure port");
    let anonymous = Command::new("curl")
        .args(["-sk", "-o", "/dev/null", "-w", "%{http_code}"])
        .arg(format!("https://127.0.0.1:{port}/pods"))
        .output()
        .expect("curl");
    assert_eq!(String::from_utf8_lossy(&anonymous.stdout), "401");

    // A valid identity the API server does not let reach nodes: the node asks the API server
    // (TokenReview, then SubjectAccessReview) and answers 403 with upstream's message.
    let token = c.wait_for(
        &node,
        "a service account token",
        Duration::from_secs(60),
        || {
            let out = c.kubectl(&["-n", &ns, "create", "token", "default"]);
            out.status
                .success()
                .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
        },
    );
    let refused = Command::new("curl")
        .args(["-sk", "-w", "\n%{http_code}", "-H"])
        .arg(format!("Authorization: Bearer {token}"))
        .arg(format!("https://127.0.0.1:{port}/pods"))
        .output()
        .expect("curl");
    let refused = String::from_utf8_lossy(&refused.stdout);
    // Fine-grained kubelet authorization (1.33+): `nodes/pods` first, then `nodes/proxy`.
    assert_eq!(
        refused,
        format!(
            "Forbidden (user=system:serviceaccount:{ns}:default, verb=get, resource=nodes, subresource(s)=[pods proxy])\n\n403"
        ),
    );
    assert_never_forbidden(&node);
}
