//! The node's content-addressed store of pulled artifacts (`<rootDir>/plugins/oci`): blobs by
//! digest, the last digest each tag resolved to (what serves when the registry is down), and
//! the signatures checked for each manifest (so a restart offline can check them again).

use super::cosign::{Attached, Signature};
use super::reference::OciReference;
use crate::engine::sha256_hex;
use std::path::{Path, PathBuf};

/// The store under one directory.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

/// `sha256:<hex>` of `bytes`.
pub(crate) fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(bytes))
}

/// The hex of a `sha256:<hex>` digest, if it is one (so it can name a file).
fn hex_of(digest: &str) -> Option<&str> {
    digest
        .strip_prefix("sha256:")
        .filter(|hex| hex.len() == 64 && hex.chars().all(|c| c.is_ascii_hexdigit()))
}

/// Writes through a temporary file and a rename: a reader never sees half a file.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&tmp, bytes).and_then(|()| std::fs::rename(&tmp, path))
}

impl Store {
    /// The store at `root` (created on first write).
    pub fn new(root: PathBuf) -> Self {
        Self { root }
    }

    /// Where the blob with `digest` lives.
    pub fn blob_path(&self, digest: &str) -> Option<PathBuf> {
        hex_of(digest).map(|hex| self.root.join("blobs/sha256").join(hex))
    }

    /// Stores `bytes` under their digest; returns it.
    pub fn put_blob(&self, bytes: &[u8]) -> std::io::Result<String> {
        let digest = digest_of(bytes);
        if let Some(path) = self.blob_path(&digest) {
            if !path.exists() {
                write_atomic(&path, bytes)?;
            }
        }
        Ok(digest)
    }

    /// The blob with `digest`, if stored and still that digest; a blob changed on disk is
    /// removed so it is pulled again.
    pub fn blob(&self, digest: &str) -> Option<Vec<u8>> {
        let path = self.blob_path(digest)?;
        let bytes = std::fs::read(&path).ok()?;
        if digest_of(&bytes) != digest {
            tracing::warn!(blob = %path.display(), "stored blob does not match its digest; removed, it will be pulled again");
            let _ = std::fs::remove_file(&path);
            return None;
        }
        Some(bytes)
    }

    fn ref_path(&self, reference: &OciReference) -> PathBuf {
        let escaped: String = reference
            .to_string()
            .trim_start_matches("oci://")
            .bytes()
            .map(|b| match b {
                b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'.' | b'-' | b'_' => {
                    (b as char).to_string()
                }
                other => format!("%{other:02X}"),
            })
            .collect();
        self.root.join("refs").join(escaped)
    }

    /// Records the manifest digest that last served for a tag reference.
    pub fn record_ref(&self, reference: &OciReference, digest: &str) -> std::io::Result<()> {
        write_atomic(&self.ref_path(reference), digest.as_bytes())
    }

    /// The manifest digest that last served for a tag reference.
    pub fn cached_ref(&self, reference: &OciReference) -> Option<String> {
        let text = std::fs::read_to_string(self.ref_path(reference)).ok()?;
        let digest = text.trim();
        hex_of(digest).map(|_| digest.to_string())
    }

    fn signatures_path(&self, digest: &str) -> Option<PathBuf> {
        hex_of(digest).map(|hex| {
            self.root
                .join("signatures")
                .join(format!("sha256-{hex}.json"))
        })
    }

    /// Keeps the signatures and bundles found for the manifest `digest`.
    pub fn put_signatures(&self, digest: &str, attached: &Attached) -> std::io::Result<()> {
        let Some(path) = self.signatures_path(digest) else {
            return Ok(());
        };
        let text = serde_json::to_vec(attached).map_err(std::io::Error::other)?;
        write_atomic(&path, &text)
    }

    /// The signatures and bundles kept for the manifest `digest` (none when never fetched).
    pub fn signatures(&self, digest: &str) -> Attached {
        /// A store written before bundles were read kept a bare list of `.sig` signatures.
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Kept {
            Attached(Attached),
            Signatures(Vec<Signature>),
        }
        let kept = self
            .signatures_path(digest)
            .and_then(|path| std::fs::read(path).ok())
            .and_then(|bytes| serde_json::from_slice(&bytes).ok());
        match kept {
            Some(Kept::Attached(attached)) => attached,
            Some(Kept::Signatures(signatures)) => Attached {
                signatures,
                bundles: Vec::new(),
            },
            None => Attached::default(),
        }
    }
}
