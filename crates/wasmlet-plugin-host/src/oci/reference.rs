//! `oci://registry[:port]/repository[:tag|@sha256:<hex>]`: a plugin's place in a registry.

use std::fmt;

/// A reference to a plugin artifact; the registry is always named (no implicit Docker Hub).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OciReference {
    registry: String,
    repository: String,
    tag: Option<String>,
    digest: Option<String>,
}

/// Why a reference cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("oci://{text}: {message}")]
pub struct ReferenceError {
    text: String,
    message: String,
}

impl OciReference {
    /// Parses the text after `oci://`. A digest wins over a tag written beside it, as in
    /// docker and cosign; neither means the tag `latest`.
    pub fn parse(text: &str) -> Result<Self, ReferenceError> {
        let fail = |message: String| ReferenceError {
            text: text.to_string(),
            message,
        };
        let host = text.split('/').next().unwrap_or_default();
        let names_registry =
            text.contains('/') && (host.contains('.') || host.contains(':') || host == "localhost");
        if !names_registry {
            return Err(fail(
                "name the registry, as in oci://registry.example:5000/plugins/policy:v1".into(),
            ));
        }
        let parsed: oci_client::Reference = text
            .parse()
            .map_err(|e| fail(format!("not a reference: {e}")))?;
        if parsed.registry() != host {
            return Err(fail(format!(
                "the registry {host:?} is read as {:?}",
                parsed.registry()
            )));
        }
        let digest = parsed.digest().map(str::to_string);
        if let Some(digest) = &digest {
            let hex = digest.strip_prefix("sha256:").unwrap_or_default();
            if hex.len() != 64 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(fail(format!("{digest:?} is not sha256:<64 hex digits>")));
            }
        }
        Ok(Self {
            registry: parsed.registry().to_string(),
            repository: parsed.repository().to_string(),
            tag: parsed.tag().map(str::to_string),
            digest: digest.map(|d| d.to_lowercase()),
        })
    }

    /// `host[:port]`.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The repository inside the registry.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    /// The tag to resolve; `None` for a digest reference, which never moves.
    pub fn tag(&self) -> Option<&str> {
        match self.digest {
            Some(_) => None,
            None => Some(self.tag.as_deref().unwrap_or("latest")),
        }
    }

    /// The pinned manifest digest, `sha256:<hex>`.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_deref()
    }

    /// The same repository at `digest`.
    pub fn at_digest(&self, digest: &str) -> Self {
        Self {
            digest: Some(digest.to_string()),
            ..self.clone()
        }
    }

    /// The same repository at `tag`.
    pub(crate) fn at_tag(&self, tag: &str) -> Self {
        Self {
            tag: Some(tag.to_string()),
            digest: None,
            ..self.clone()
        }
    }

    /// `registry/repository`, what cosign signs as the `docker-reference`.
    pub fn repository_name(&self) -> String {
        format!("{}/{}", self.registry, self.repository)
    }

    /// The reference as the OCI client takes it.
    pub(crate) fn client_reference(&self) -> oci_client::Reference {
        match (&self.digest, self.tag()) {
            (Some(digest), _) => oci_client::Reference::with_digest(
                self.registry.clone(),
                self.repository.clone(),
                digest.clone(),
            ),
            (None, tag) => oci_client::Reference::with_tag(
                self.registry.clone(),
                self.repository.clone(),
                tag.unwrap_or("latest").to_string(),
            ),
        }
    }

    /// A registry on the loopback interface (`localhost`, `127.0.0.0/8`), which is spoken to
    /// over plain HTTP. (The reference grammar has no IPv6 literals.)
    pub fn is_loopback(&self) -> bool {
        let host = self.registry.split(':').next().unwrap_or_default();
        host == "localhost"
            || host
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }
}

impl fmt::Display for OciReference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "oci://{}/{}", self.registry, self.repository)?;
        match (&self.digest, self.tag()) {
            (Some(digest), _) => write!(f, "@{digest}"),
            (None, tag) => write!(f, ":{}", tag.unwrap_or("latest")),
        }
    }
}
