//! cosign signatures as `verify` meets them: the simple-signing payload, the base64 and DER of
//! the signature, the public key's PEM. The first byte picks what the rest is:
//!
//! - 0: a payload, signed here with the fuzz key, so verification gets past ECDSA and reads
//!   the payload's JSON; the rest after a newline is the digest asked for;
//! - 1: a signature layer as stored (payload base64, signature base64), checked with the
//!   fuzz key;
//! - 2: a public key PEM, checked against a good signature.
//!
//! Never panics; what `verify` accepts is a payload of cosign's type that names the digest
//! asked for, signed by the key, and one good signature among bad ones is enough.
#![no_main]

use base64::Engine as _;
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use wasmlet_plugin_host::oci_parsers::{payload, sign, verify, Signature};

/// A P-256 key made for this target (`openssl genpkey -algorithm EC -pkeyopt
/// ec_paramgen_curve:P-256`); it signs nothing else.
const PRIVATE_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg0l3ODYqh3rbjqmTG
uUhMyQB8XXt5nQe06pnHWI9Cg6yhRANCAAT6nc/g77JSsX95TbheCY9YZKh7xX6K
28d8Wsmr876sAY0EPPKjrozOZgbSshbk13dw+v6T6pLMdfgD+iQEKHsb
-----END PRIVATE KEY-----
";
/// Its public key, as `cosign.pub` holds one.
const PUBLIC_KEY: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE+p3P4O+yUrF/eU24XgmPWGSoe8V+
itvHfFrJq/O+rAGNBDzyo66MzmYG0rIW5Nd3cPr+k+qSzHX4A/okBCh7Gw==
-----END PUBLIC KEY-----
";
const DIGEST: &str = "sha256:0b3b1bd4ae7e1ba2d2c2f1e3e4a5b6c7d8e9f00112233445566778899aabbccd";

/// Whether `payload` is cosign's simple signing for `digest`, read independently of `verify`.
fn names(payload: &[u8], digest: &str) -> bool {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(payload) else {
        return false;
    };
    json["critical"]["type"] == "cosign container image signature"
        && json["critical"]["image"]["docker-manifest-digest"] == digest
}

/// A good signature of [`DIGEST`], made once (signing is most of an input's time).
fn good() -> &'static Signature {
    static GOOD: OnceLock<Signature> = OnceLock::new();
    GOOD.get_or_init(|| signed(&payload("localhost:5000/p", DIGEST)))
}

fn signed(payload: &[u8]) -> Signature {
    Signature {
        payload: base64::engine::general_purpose::STANDARD.encode(payload),
        signature: sign(PRIVATE_KEY, payload).expect("the fuzz key signs"),
    }
}

fuzz_target!(|bytes: &[u8]| {
    let Some((&mode, rest)) = bytes.split_first() else {
        return;
    };
    match mode % 3 {
        0 => {
            let (body, digest) = match rest.iter().position(|&b| b == b'\n') {
                Some(at) => (&rest[..at], String::from_utf8_lossy(&rest[at + 1..])),
                None => (rest, DIGEST.into()),
            };
            if verify(PUBLIC_KEY, &[signed(body)], &digest).is_ok() {
                assert!(names(body, &digest), "{:?}", String::from_utf8_lossy(body));
            }
        }
        1 => {
            let text = String::from_utf8_lossy(rest);
            let (payload_b64, signature) = text.split_once('\n').unwrap_or((&text, ""));
            let found = Signature {
                payload: payload_b64.to_string(),
                signature: signature.to_string(),
            };
            // A good signature beside it: one that passes is enough, a bad one never spoils it.
            assert!(verify(PUBLIC_KEY, &[found.clone(), good().clone()], DIGEST).is_ok());
            if verify(PUBLIC_KEY, std::slice::from_ref(&found), DIGEST).is_ok() {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(&found.payload)
                    .expect("an accepted payload is base64");
                assert!(names(&decoded, DIGEST));
            }
        }
        _ => {
            let pem = String::from_utf8_lossy(rest);
            if verify(&pem, std::slice::from_ref(good()), DIGEST).is_ok() {
                assert!(pem.contains("PUBLIC KEY"), "{pem}");
            }
        }
    }
});
