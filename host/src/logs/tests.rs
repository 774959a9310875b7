use super::*;
use futures::StreamExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const LOG: &str = "2026-11-29T10:00:00.000000001Z stdout F one\n\
                   2026-11-29T10:00:01.000000000Z stderr F two\n\
                   2026-11-29T10:00:02.000000000Z stdout P thr\n\
                   2026-11-29T10:00:02.000000001Z stdout F ee\n";

fn write_log(text: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("0.log");
    std::fs::write(&file, text).unwrap();
    (dir, file)
}

async fn read_all(file: &Path, options: LogOptions) -> String {
    let mut out = Vec::new();
    let mut stream = std::pin::pin!(stream(file.to_path_buf(), options, || async { false }));
    while let Some(chunk) = stream.next().await {
        out.extend_from_slice(&chunk.unwrap());
    }
    String::from_utf8(out).unwrap()
}

#[tokio::test]
async fn joins_partial_lines_and_applies_options() {
    let (_dir, file) = write_log(LOG);
    let all = LogOptions::default();
    assert_eq!(read_all(&file, all).await, "one\ntwo\nthree\n");
    let tail = LogOptions {
        tail_lines: Some(2),
        ..Default::default()
    };
    assert_eq!(read_all(&file, tail).await, "two\nthree\n");
    let since = LogOptions {
        since_time: Some("2026-11-29T10:00:01Z".into()),
        ..Default::default()
    };
    assert_eq!(read_all(&file, since).await, "two\nthree\n");
    let stamps = LogOptions {
        timestamps: true,
        tail_lines: Some(1),
        ..Default::default()
    };
    assert_eq!(
        read_all(&file, stamps).await,
        "2026-11-29T10:00:02.000000000Z three\n"
    );
    let limited = LogOptions {
        limit_bytes: Some(6),
        ..Default::default()
    };
    assert_eq!(read_all(&file, limited).await, "one\ntw");
    let stderr = LogOptions {
        stream: Some("Stderr".into()),
        ..Default::default()
    };
    assert_eq!(read_all(&file, stderr).await, "two\n");
    let none = LogOptions {
        tail_lines: Some(0),
        ..Default::default()
    };
    assert_eq!(read_all(&file, none).await, "");
    let more = LogOptions {
        tail_lines: Some(10),
        ..Default::default()
    };
    assert_eq!(read_all(&file, more).await, "one\ntwo\nthree\n");
}

#[tokio::test]
async fn tail_scans_back_across_chunks_without_reading_everything() {
    // 20 000 lines (~1 MiB), some split by the runtime into P pieces, an unfinished last entry.
    let mut text = String::new();
    let mut lines = Vec::new();
    for i in 0..20_000 {
        if i % 7 == 0 {
            text.push_str(&format!(
                "2026-11-29T10:00:00.000000000Z stdout P line-{i}-\n\
                 2026-11-29T10:00:00.000000001Z stdout F rest\n"
            ));
            lines.push(format!("line-{i}-rest\n"));
        } else {
            text.push_str(&format!(
                "2026-11-29T10:00:00.000000000Z stdout F line-{i}\n"
            ));
            lines.push(format!("line-{i}\n"));
        }
    }
    text.push_str("2026-11-29T10:00:00.000000000Z stdout F unfinish");
    let (_dir, file) = write_log(&text);
    for tail in [1, 3, 15, 5000, 19_999, 20_000, 30_000] {
        let options = LogOptions {
            tail_lines: Some(tail),
            ..Default::default()
        };
        let expected: String = lines[lines.len().saturating_sub(tail as usize)..].concat();
        assert_eq!(read_all(&file, options).await, expected, "tailLines={tail}");
    }
}

#[tokio::test]
async fn follow_streams_appended_lines_until_the_container_stops() {
    let (_dir, file) = write_log("2026-11-29T10:00:00Z stdout F first\n");
    let running = Arc::new(AtomicBool::new(true));
    let flag = running.clone();
    let options = LogOptions {
        follow: true,
        ..Default::default()
    };
    let mut stream = Box::pin(stream(file.clone(), options, move || {
        let running = flag.load(Ordering::SeqCst);
        async move { running }
    }));
    assert_eq!(&stream.next().await.unwrap().unwrap()[..], b"first\n");
    use std::io::Write;
    let mut writer = std::fs::OpenOptions::new()
        .append(true)
        .open(&file)
        .unwrap();
    // Half an entry, then the rest: only whole entries are sent.
    writer
        .write_all(b"2026-11-29T10:00:01Z stdout F sec")
        .unwrap();
    let next = tokio::spawn(async move {
        let chunk = stream.next().await.unwrap().unwrap();
        (chunk, stream)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    writer.write_all(b"ond\n").unwrap();
    let (chunk, mut stream) = next.await.unwrap();
    assert_eq!(&chunk[..], b"second\n");
    // The container stops after a last line: it is sent, then the stream ends.
    writer
        .write_all(b"2026-11-29T10:00:02Z stdout F last\n")
        .unwrap();
    running.store(false, Ordering::SeqCst);
    let rest = tokio::time::timeout(Duration::from_secs(5), async {
        let mut rest = Vec::new();
        while let Some(chunk) = stream.next().await {
            rest.extend_from_slice(&chunk.unwrap());
        }
        rest
    })
    .await
    .expect("the stream ends once the container stopped");
    assert_eq!(rest, b"last\n");
}

#[test]
fn options_are_validated_as_upstream() {
    let check = |options: LogOptions| options.validate().map_err(|e| e.to_string());
    assert!(check(LogOptions::default()).is_ok());
    let zero = LogOptions {
        limit_bytes: Some(0),
        ..Default::default()
    };
    assert_eq!(
        check(zero).unwrap_err(),
        "limitBytes must be greater than 0"
    );
    let both = LogOptions {
        since_seconds: Some(5),
        since_time: Some("2026-11-29T10:00:00Z".into()),
        ..Default::default()
    };
    assert!(check(both).is_err());
    let bad_time = LogOptions {
        since_time: Some("yesterday".into()),
        ..Default::default()
    };
    assert!(check(bad_time).unwrap_err().contains("yesterday"));
    let bad_stream = LogOptions {
        stream: Some("Both".into()),
        ..Default::default()
    };
    assert_eq!(
        check(bad_stream).unwrap_err(),
        r#"invalid stream type "Both""#
    );
}

#[test]
fn malformed_lines_are_skipped_and_files_found() {
    assert_eq!(parse_line(b"garbage"), None);
    let dir = tempfile::tempdir().unwrap();
    let pod = dir.path().join("default_web_1234");
    std::fs::create_dir_all(pod.join("main")).unwrap();
    std::fs::create_dir_all(dir.path().join("default_webx_99")).unwrap();
    for attempt in [0, 2, 1] {
        std::fs::write(log_file(&pod, "main", attempt), "").unwrap();
    }
    assert_eq!(
        find_pod_log_dir(dir.path(), "default", "web").unwrap(),
        Some(pod.clone())
    );
    assert_eq!(
        find_pod_log_dir(dir.path(), "default", "nope").unwrap(),
        None
    );
    assert_eq!(attempts(&pod.join("main")).unwrap(), [0, 1, 2]);
}
