//! The authenticated kubelet API through the real API server: `kubectl logs`, `exec` (exit
//! code, stdin), `port-forward` carrying an HTTP request, and `kubectl top` through
//! metrics-server; a client without credentials is refused by the node itself.

use crate::cluster::{assert_never_forbidden, busybox_pod, cluster, shared};
use crate::harness::NodeOptions;
use std::process::{Command, Stdio};
use std::time::Duration;

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

    // port-forward: an HTTP request to busybox httpd in the pod, through the API server.
    let mut forward = Command::new(c.kubectl_path())
        .arg("--kubeconfig")
        .arg(c.dir.join("admin.kubeconfig"))
        .args(["-n", &ns, "port-forward", "pod/web", ":8080"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl port-forward");
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
    assert_never_forbidden(&node);
}
