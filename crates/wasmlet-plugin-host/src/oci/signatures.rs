//! What signs a manifest in a registry, in both layouts cosign writes: the `.sig` tag
//! (`sha256-<hex>.sig`, simple-signing layers) and Sigstore bundles attached as OCI 1.1
//! referrers (the referrers API, or on a registry without it the fallback tag `sha256-<hex>`
//! holding an image index). And the `.sig` tag `wasmlet plugin sign` writes.

use super::cosign::{self, Attached, Signature};
use super::store::digest_of;
use super::{artifact, not_found, OciError, Remote};
use base64::Engine as _;
use p256::ecdsa::SigningKey;

/// The most referrers read for one manifest (each is a manifest and a blob to pull).
const MAX_REFERRERS: usize = 16;
/// The largest signature payload or bundle read.
const MAX_SIGNATURE_BYTES: u64 = 1 << 20;
/// The OCI empty descriptor's media type (an artifact's config when it has none).
const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";

impl Remote {
    /// The `.sig` signatures and Sigstore bundles stored for the manifest `digest` (empty when
    /// it has none).
    pub async fn attached(&self, digest: &str) -> Result<Attached, OciError> {
        let signatures = self.signatures(digest).await?;
        let bundles = self.bundles(digest).await?;
        Ok(Attached {
            signatures,
            bundles,
        })
    }

    /// The signatures of the tag cosign gives the manifest `digest` (none when it has none).
    pub async fn signatures(&self, digest: &str) -> Result<Vec<Signature>, OciError> {
        self.login().await;
        let tag = cosign::signature_tag(digest);
        let image = self.reference.at_tag(&tag).client_reference();
        let body = match self
            .client
            .pull_manifest_raw(
                &image,
                &self.auth,
                &[
                    artifact::MANIFEST_MEDIA_TYPE,
                    artifact::DOCKER_MANIFEST_MEDIA_TYPE,
                ],
            )
            .await
        {
            Ok((body, _)) => body,
            Err(e) if not_found(&e) => return Ok(Vec::new()),
            Err(e) => return Err(self.error(&format!("pulling the signatures {tag}"), e)),
        };
        let manifest = artifact::Manifest::parse(&body).map_err(|source| OciError::Artifact {
            reference: self.reference.to_string(),
            doing: format!("signatures {tag}: "),
            source,
        })?;
        let mut signatures = Vec::new();
        for layer in manifest
            .layers
            .iter()
            .filter(|l| l.media_type == cosign::SIMPLE_SIGNING_MEDIA_TYPE)
        {
            let Some(signature) = layer
                .annotations
                .as_ref()
                .and_then(|a| a.get(cosign::SIGNATURE_ANNOTATION))
            else {
                continue;
            };
            let payload = self
                .blob(&layer.digest, layer.size, MAX_SIGNATURE_BYTES)
                .await?;
            signatures.push(Signature {
                payload: base64::engine::general_purpose::STANDARD.encode(payload),
                signature: signature.clone(),
            });
        }
        Ok(signatures)
    }

    /// The Sigstore bundles among the referrers of the manifest `digest`. A registry that
    /// cannot list referrers (an error other than unreachable) counts as having none: the
    /// `.sig` tag may still sign the manifest.
    async fn bundles(&self, digest: &str) -> Result<Vec<String>, OciError> {
        self.login().await;
        let subject = self.reference.at_digest(digest).client_reference();
        let index = match self.client.pull_referrers(&subject, None).await {
            Ok(index) => index,
            Err(e) if not_found(&e) => return Ok(Vec::new()),
            Err(e) => {
                let error = self.error(&format!("listing the referrers of {digest}"), e);
                if error.is_unreachable() {
                    return Err(error);
                }
                tracing::debug!(reference = %self.reference, %digest, %error, "referrers not listed; only the .sig tag is read");
                return Ok(Vec::new());
            }
        };
        let mut bundles = Vec::new();
        // The fallback index that go-containerregistry (cosign's client) writes lists a
        // bundle under its config's type, the empty descriptor's, not the bundle's.
        let candidates = index.manifests.iter().filter(|entry| {
            entry.media_type == artifact::MANIFEST_MEDIA_TYPE
                && entry.artifact_type.as_deref().is_none_or(|t| {
                    t.starts_with(cosign::bundle::BUNDLE_MEDIA_TYPE_PREFIX) || t == EMPTY_MEDIA_TYPE
                })
        });
        for entry in candidates.take(MAX_REFERRERS) {
            let body = self.manifest(&entry.digest).await?;
            let Ok(manifest) = artifact::Manifest::parse(&body) else {
                continue;
            };
            for layer in manifest.layers.iter().filter(|l| {
                l.media_type
                    .starts_with(cosign::bundle::BUNDLE_MEDIA_TYPE_PREFIX)
            }) {
                let bytes = self
                    .blob(&layer.digest, layer.size, MAX_SIGNATURE_BYTES)
                    .await?;
                match String::from_utf8(bytes) {
                    Ok(json) => bundles.push(json),
                    Err(_) => {
                        tracing::debug!(reference = %self.reference, layer = %layer.digest, "bundle layer is not UTF-8; skipped")
                    }
                }
            }
        }
        Ok(bundles)
    }

    /// Adds a signature by `key` of the manifest `digest` to the signatures cosign would find
    /// (`sha256-<hex>.sig`), keeping those already there. Returns the tag.
    pub async fn sign(&self, digest: &str, key: &SigningKey) -> Result<String, OciError> {
        self.login().await;
        let payload = cosign::payload(&self.reference.repository_name(), digest);
        let signature = cosign::sign_with(key, &payload);
        let tag = cosign::signature_tag(digest);
        let image = self.reference.at_tag(&tag).client_reference();
        let mut layers: Vec<serde_json::Value> = match self
            .client
            .pull_manifest_raw(&image, &self.auth, &[artifact::MANIFEST_MEDIA_TYPE])
            .await
        {
            Ok((body, _)) => serde_json::from_slice::<serde_json::Value>(&body)
                .ok()
                .and_then(|m| m.get("layers").and_then(|l| l.as_array()).cloned())
                .unwrap_or_default(),
            Err(e) if not_found(&e) => Vec::new(),
            Err(e) => return Err(self.error(&format!("pulling the signatures {tag}"), e)),
        };
        let payload_digest = digest_of(&payload);
        self.client
            .push_blob(&image, payload.clone(), &payload_digest)
            .await
            .map_err(|e| self.error("pushing the signature payload", e))?;
        layers.retain(|l| {
            l["annotations"][cosign::SIGNATURE_ANNOTATION].as_str() != Some(signature.as_str())
        });
        layers.push(serde_json::json!({
            "mediaType": cosign::SIMPLE_SIGNING_MEDIA_TYPE,
            "digest": payload_digest,
            "size": payload.len(),
            "annotations": {cosign::SIGNATURE_ANNOTATION: signature},
        }));
        let diff_ids: Vec<&serde_json::Value> = layers.iter().map(|l| &l["digest"]).collect();
        let config = serde_json::to_vec(&serde_json::json!({
            "architecture": "",
            "os": "",
            "config": {},
            "rootfs": {"type": "layers", "diff_ids": diff_ids},
        }))
        .unwrap_or_default();
        let config_digest = digest_of(&config);
        self.client
            .push_blob(&image, config.clone(), &config_digest)
            .await
            .map_err(|e| self.error("pushing the signature config", e))?;
        let manifest = serde_json::to_vec(&serde_json::json!({
            "schemaVersion": 2,
            "mediaType": artifact::MANIFEST_MEDIA_TYPE,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest, "size": config.len()},
            "layers": layers,
        }))
        .unwrap_or_default();
        self.push_manifest(&image, manifest).await?;
        Ok(tag)
    }
}
