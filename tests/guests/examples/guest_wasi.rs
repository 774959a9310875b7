//! An eviction plugin that tries the WASI operations a capability grant
//! allows or denies, and reports each outcome as its `rank` error, so a
//! test can read what the host let it do.
//!
//! Config (every field optional):
//! `{"read": FILE, "write": FILE, "env": NAME, "print": TEXT, "connect": "IP:PORT"}`.
//! `configure` prints `print` to stdout and stderr; `rank` tries the rest
//! and answers `Err("read=ok:<content> write=err:<message> env=<value>
//! connect=err:<message>")`.

use serde::Deserialize;
use wasmlet_plugin_sdk::{config, export, EvictionPolicy, NodeInfo, PodInfo, SignalObservation};

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
struct Config {
    read: Option<String>,
    write: Option<String>,
    env: Option<String>,
    print: Option<String>,
    connect: Option<String>,
}

#[derive(Default)]
pub struct WasiProbe {
    config: Config,
}

fn outcome<T>(result: std::io::Result<T>, ok: impl FnOnce(T) -> String) -> String {
    match result {
        Ok(value) => format!("ok:{}", ok(value)),
        Err(error) => format!("err:{error}"),
    }
}

impl EvictionPolicy for WasiProbe {
    fn configure(&mut self, text: &str) -> Result<(), String> {
        self.config = config::parse(text)?;
        if let Some(text) = &self.config.print {
            println!("{text}");
            eprintln!("{text} (stderr)");
        }
        Ok(())
    }

    fn rank(
        &self,
        _: &NodeInfo,
        _: &[SignalObservation],
        _: &[PodInfo],
    ) -> Result<Vec<u32>, String> {
        let mut report = Vec::new();
        if let Some(path) = &self.config.read {
            let read = outcome(std::fs::read_to_string(path), |s| s.trim().to_string());
            report.push(format!("read={read}"));
        }
        if let Some(path) = &self.config.write {
            report.push(format!(
                "write={}",
                outcome(std::fs::write(path, b"x"), |()| String::new())
            ));
        }
        if let Some(name) = &self.config.env {
            let value = std::env::var(name).unwrap_or_else(|_| "unset".into());
            report.push(format!("env={value}"));
        }
        if let Some(address) = &self.config.connect {
            let connected = outcome(std::net::TcpStream::connect(address), |_| String::new());
            report.push(format!("connect={connected}"));
        }
        Err(report.join(" "))
    }
}

export!(WasiProbe as eviction);
