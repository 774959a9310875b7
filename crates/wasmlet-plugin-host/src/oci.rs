//! Plugins shipped through OCI registries: `oci://` references, the node's content-addressed
//! store, pulls with every digest checked (manifest and component layer), pushes in the CNCF
//! wasm artifact layout, and cosign-compatible key-pair signatures checked offline.
//!
//! The HTTP side is the ORAS project's `oci-client`; this module decides what is accepted.

pub(crate) mod artifact;
mod auth;
pub(crate) mod cosign;
mod reference;
mod signatures;
mod store;
#[cfg(test)]
mod tests;
mod tls;

pub use reference::{OciReference, ReferenceError};
pub use store::Store;

/// What a registry sends, read before anything of it is trusted: the manifest and its one
/// wasm layer, the cosign simple-signing payloads and their signatures, and the store's
/// digest-named paths. Public (as `wasmlet_plugin_host::oci_parsers`) only so the fuzz targets
/// in `fuzz/` reach these parsers; the node itself goes through [`Remote`] and [`from_store`].
pub mod parsers {
    pub use super::artifact::{
        ArtifactError, Descriptor, Manifest, LEGACY_WASM_LAYER_MEDIA_TYPE, MAX_LAYER_BYTES,
        WASM_LAYER_MEDIA_TYPE,
    };
    pub use super::cosign::{bundle, payload, sign, verify, verify_attached, Attached, Signature};
    pub use super::store::Store;
}

use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::secrets::RegistryAuth;
use std::path::{Path, PathBuf};
use std::time::Duration;
use store::digest_of;
use tls::TlsFailure;

/// Why an artifact could not be had.
#[derive(Debug, thiserror::Error)]
pub enum OciError {
    /// The registry could not be reached (connection, timeout, 5xx): retried with back-off,
    /// the version serving keeps serving.
    #[error("{reference}: registry unreachable: {message}")]
    Unreachable {
        /// The reference.
        reference: String,
        /// The transport's words.
        message: String,
    },
    /// The registry answered, and the answer is not acceptable (not found, denied, a digest
    /// that does not match, not a wasm artifact, unsigned...).
    #[error("{reference}: {message}")]
    Refused {
        /// The reference.
        reference: String,
        /// Why.
        message: String,
    },
    /// The registry config file gives no credentials.
    #[error("{reference}: {source}")]
    Credentials {
        /// The reference.
        reference: String,
        /// What is wrong with the file.
        #[source]
        source: auth::CredentialsError,
    },
    /// The manifest is not a plugin artifact wasmlet accepts (`doing` says whose: the
    /// artifact's, or a signature tag's).
    #[error("{reference}: {doing}{source}")]
    Artifact {
        /// The reference.
        reference: String,
        /// What was read, as a prefix of the message (`signatures <tag>: `), or empty.
        doing: String,
        /// What is wrong with it.
        #[source]
        source: artifact::ArtifactError,
    },
    /// No signature by the configured public key signs the manifest.
    #[error("{reference}: signature refused (public key {}): {source}", .key.display())]
    Signature {
        /// The reference.
        reference: String,
        /// The `verify.publicKey` file.
        key: PathBuf,
        /// Why each signature found was refused, or that none was found.
        #[source]
        source: cosign::VerifyError,
    },
}

impl OciError {
    fn artifact(reference: &OciReference, source: artifact::ArtifactError) -> Self {
        Self::Artifact {
            reference: reference.to_string(),
            doing: String::new(),
            source,
        }
    }

    fn refused(reference: &OciReference, message: impl Into<String>) -> Self {
        Self::Refused {
            reference: reference.to_string(),
            message: message.into(),
        }
    }

    /// Whether the registry was not reached (as opposed to refusing the artifact).
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Self::Unreachable { .. })
    }
}

fn not_found(error: &OciDistributionError) -> bool {
    match error {
        OciDistributionError::RegistryError { envelope, .. } => envelope.errors.iter().any(|e| {
            matches!(
                e.code,
                OciErrorCode::ManifestUnknown | OciErrorCode::NotFound | OciErrorCode::NameUnknown
            )
        }),
        OciDistributionError::ServerError { code, .. } => *code == 404,
        OciDistributionError::ImageManifestNotFoundError(_) => true,
        _ => false,
    }
}

/// How to reach a registry: the `insecure`, `caFile` and `registryConfig` of an `oci://`
/// plugin, or the flags every `wasmlet plugin push|pull|sign` shares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegistryAccess {
    /// Plain HTTP to a registry not on loopback.
    pub insecure: bool,
    /// A PEM file of CA certificates trusted for the registry besides the system roots; with
    /// it a loopback registry is reached over HTTPS too.
    pub ca_file: Option<PathBuf>,
    /// A docker-style `config.json` with credentials (default: docker's own).
    pub registry_config: Option<PathBuf>,
}

impl RegistryAccess {
    /// Plain HTTP for `reference`: when `insecure`, or on loopback unless a CA file asks for
    /// HTTPS; every other registry is reached over HTTPS.
    pub fn plain_http(&self, reference: &OciReference) -> bool {
        self.insecure || (reference.is_loopback() && self.ca_file.is_none())
    }
}

/// A connection to the registry of one reference, with its credentials.
pub struct Remote {
    client: oci_client::Client,
    auth: RegistryAuth,
    reference: OciReference,
    /// Whether requests go over plain HTTP (what a TLS failure means depends on it).
    plain_http: bool,
    /// `host:port` of the registry, for errors.
    address: String,
}

impl Remote {
    /// A client for `reference` reached as `access` says (see [`RegistryAccess::plain_http`]),
    /// with credentials from its `registry_config` (or the default docker config file).
    pub fn new(reference: &OciReference, access: &RegistryAccess) -> Result<Self, OciError> {
        // reqwest is built without a default crypto provider: the workspace's is ring.
        let _ = rustls::crypto::ring::default_provider().install_default();
        if let (true, Some(ca_file)) = (access.insecure, &access.ca_file) {
            return Err(OciError::refused(
                reference,
                format!(
                    "insecure (plain HTTP) and the CA file {} (HTTPS) exclude each other: give one",
                    ca_file.display()
                ),
            ));
        }
        let extra_root_certificates = match &access.ca_file {
            Some(file) => tls::ca_certificates(file)
                .map_err(|e| OciError::refused(reference, e.to_string()))?,
            None => Vec::new(),
        };
        let plain_http = access.plain_http(reference);
        let protocol = if plain_http {
            oci_client::client::ClientProtocol::Http
        } else {
            oci_client::client::ClientProtocol::Https
        };
        let config = oci_client::client::ClientConfig {
            protocol,
            extra_root_certificates,
            connect_timeout: Some(Duration::from_secs(10)),
            read_timeout: Some(Duration::from_secs(60)),
            platform_resolver: None,
            user_agent: concat!("wasmlet/", env!("CARGO_PKG_VERSION")),
            ..Default::default()
        };
        let client = oci_client::Client::try_from(config)
            .map_err(|e| OciError::refused(reference, format!("cannot build a client: {e}")))?;
        let auth = auth::credentials(reference.registry(), access.registry_config.as_deref())
            .map_err(|source| OciError::Credentials {
                reference: reference.to_string(),
                source,
            })?;
        Ok(Self {
            client,
            auth,
            reference: reference.clone(),
            plain_http,
            address: tls::address(reference.registry(), plain_http),
        })
    }

    fn error(&self, doing: &str, error: OciDistributionError) -> OciError {
        // A TLS failure is a refusal: the registry answered, with something this node cannot
        // use, and asking again changes nothing until the config does.
        if let Some(failure) = TlsFailure::of(&error, self.plain_http) {
            let message = format!("{doing}: {}", failure.message(&self.address));
            tracing::debug!(reference = %self.reference, address = %self.address, ?failure, "registry TLS failure");
            return OciError::refused(&self.reference, message);
        }
        let message = format!("{doing}: {error}");
        let unreachable = match &error {
            OciDistributionError::RequestError(_) => true,
            OciDistributionError::ServerError { code, .. } => *code >= 500 || *code == 429,
            OciDistributionError::RegistryError { envelope, .. } => envelope
                .errors
                .iter()
                .any(|e| e.code == OciErrorCode::Toomanyrequests),
            _ => false,
        };
        if unreachable {
            OciError::Unreachable {
                reference: self.reference.to_string(),
                message,
            }
        } else {
            OciError::refused(&self.reference, message)
        }
    }

    async fn login(&self) {
        self.client
            .store_auth_if_needed(self.reference.registry(), &self.auth)
            .await;
    }

    /// The manifest digest the reference's tag points to now (a digest reference: itself).
    pub async fn resolve(&self) -> Result<String, OciError> {
        if let Some(digest) = self.reference.digest() {
            return Ok(digest.to_string());
        }
        let digest = self
            .client
            .fetch_manifest_digest(&self.reference.client_reference(), &self.auth)
            .await
            .map_err(|e| self.error("resolving the tag", e))?;
        match digest.strip_prefix("sha256:") {
            Some(hex) if hex.len() == 64 => Ok(digest),
            _ => Err(OciError::refused(
                &self.reference,
                format!("the registry answered the digest {digest:?}, not sha256:<hex>"),
            )),
        }
    }

    /// The manifest `digest`'s bytes, checked against the digest.
    async fn manifest(&self, digest: &str) -> Result<Vec<u8>, OciError> {
        self.login().await;
        let (body, _) = self
            .client
            .pull_manifest_raw(
                &self.reference.at_digest(digest).client_reference(),
                &self.auth,
                &[
                    artifact::MANIFEST_MEDIA_TYPE,
                    artifact::DOCKER_MANIFEST_MEDIA_TYPE,
                ],
            )
            .await
            .map_err(|e| self.error(&format!("pulling the manifest {digest}"), e))?;
        let actual = digest_of(&body);
        if actual != digest {
            return Err(OciError::refused(
                &self.reference,
                format!("digest mismatch: the registry sent a manifest with digest {actual} for {digest}"),
            ));
        }
        Ok(body.to_vec())
    }

    /// A blob of the repository, checked against its digest and size limit.
    async fn blob(&self, digest: &str, size: i64, limit: u64) -> Result<Vec<u8>, OciError> {
        if size < 0 || size as u64 > limit {
            return Err(OciError::refused(
                &self.reference,
                format!("the blob {digest} is {size} bytes, over the limit of {limit}"),
            ));
        }
        let descriptor = oci_client::manifest::OciDescriptor {
            digest: digest.to_string(),
            size,
            ..Default::default()
        };
        let mut bytes = Vec::with_capacity(size as usize);
        self.client
            .pull_blob(&self.reference.client_reference(), &descriptor, &mut bytes)
            .await
            .map_err(|e| {
                if matches!(e, OciDistributionError::DigestError(_)) {
                    OciError::refused(
                        &self.reference,
                        format!("digest mismatch: the registry sent other bytes for the blob {digest}: {e}"),
                    )
                } else {
                    self.error(&format!("pulling the blob {digest}"), e)
                }
            })?;
        let actual = digest_of(&bytes);
        if actual != digest {
            return Err(OciError::refused(
                &self.reference,
                format!(
                    "digest mismatch: the registry sent a blob with digest {actual} for {digest}"
                ),
            ));
        }
        Ok(bytes)
    }

    /// Pushes `wasm` (with its config) as a wasm artifact to the reference's tag; returns the
    /// manifest digest.
    pub async fn push(&self, wasm: &[u8], config: &[u8]) -> Result<String, OciError> {
        if self.reference.digest().is_some() {
            return Err(OciError::refused(
                &self.reference,
                "push to a tag, not a digest",
            ));
        }
        self.login().await;
        let image = self.reference.client_reference();
        let manifest = artifact::manifest(config, wasm);
        for blob in [config, wasm] {
            self.client
                .push_blob(&image, blob.to_vec(), &digest_of(blob))
                .await
                .map_err(|e| self.error("pushing a blob", e))?;
        }
        self.push_manifest(&image, manifest).await
    }

    async fn push_manifest(
        &self,
        image: &oci_client::Reference,
        manifest: Vec<u8>,
    ) -> Result<String, OciError> {
        let digest = digest_of(&manifest);
        self.client
            .push_manifest_raw(
                image,
                manifest,
                http::HeaderValue::from_static(artifact::MANIFEST_MEDIA_TYPE),
            )
            .await
            .map_err(|e| self.error("pushing the manifest", e))?;
        Ok(digest)
    }

    /// The manifest `digest` and its component, pulled, each checked against its digest.
    pub async fn pull(&self, digest: &str) -> Result<(Vec<u8>, Vec<u8>), OciError> {
        let manifest_bytes = self.manifest(digest).await?;
        let manifest = artifact::Manifest::parse(&manifest_bytes)
            .map_err(|e| OciError::artifact(&self.reference, e))?;
        let layer = manifest
            .wasm_layer()
            .map_err(|e| OciError::artifact(&self.reference, e))?;
        let wasm = self
            .blob(&layer.digest, layer.size, artifact::MAX_LAYER_BYTES)
            .await?;
        Ok((manifest_bytes, wasm))
    }

    /// The component of the manifest `digest`: from `store` when it holds the manifest and
    /// layer, else pulled, checked and stored.
    pub async fn fetch(&self, store: &Store, digest: &str) -> Result<Vec<u8>, OciError> {
        if let Some(wasm) = from_store(store, &self.reference, digest)? {
            return Ok(wasm);
        }
        let (manifest_bytes, wasm) = self.pull(digest).await?;
        let local = |e: std::io::Error| {
            OciError::refused(&self.reference, format!("cannot write the store: {e}"))
        };
        store.put_blob(&wasm).map_err(local)?;
        store.put_blob(&manifest_bytes).map_err(local)?;
        Ok(wasm)
    }
}

/// The component of the manifest `digest` if `store` holds both (each checked against its
/// digest as it is read).
pub fn from_store(
    store: &Store,
    reference: &OciReference,
    digest: &str,
) -> Result<Option<Vec<u8>>, OciError> {
    let Some(manifest_bytes) = store.blob(digest) else {
        return Ok(None);
    };
    let manifest =
        artifact::Manifest::parse(&manifest_bytes).map_err(|e| OciError::artifact(reference, e))?;
    let layer = manifest
        .wasm_layer()
        .map_err(|e| OciError::artifact(reference, e))?;
    Ok(store.blob(&layer.digest))
}

/// Checks the signatures of the manifest `digest` against the PEM public key at `key`, in
/// either layout (`.sig` tag or Sigstore bundle referrer): those the store keeps first, then
/// (when `remote` is given and those do not pass) the registry's, which are kept when they pass.
pub async fn check_signature(
    remote: Option<&Remote>,
    store: Option<&Store>,
    reference: &OciReference,
    digest: &str,
    key: &Path,
) -> Result<(), OciError> {
    let pem = std::fs::read_to_string(key).map_err(|e| {
        OciError::refused(
            reference,
            format!("verify.publicKey {}: {e}", key.display()),
        )
    })?;
    let refused = |source: cosign::VerifyError| OciError::Signature {
        reference: reference.to_string(),
        key: key.to_path_buf(),
        source,
    };
    let kept = store.map(|s| s.signatures(digest)).unwrap_or_default();
    if !kept.is_empty() && cosign::verify_attached(&pem, &kept, digest).is_ok() {
        return Ok(());
    }
    let Some(remote) = remote else {
        return cosign::verify_attached(&pem, &kept, digest).map_err(refused);
    };
    let found = remote.attached(digest).await?;
    cosign::verify_attached(&pem, &found, digest).map_err(refused)?;
    if let Some(Err(e)) = store.map(|s| s.put_signatures(digest, &found)) {
        tracing::warn!(%reference, error = %e, "cannot keep the checked signatures in the store");
    }
    Ok(())
}
