//! The packed pod layout of `rank`: any word list decodes or is refused by name, never
//! panics; what decodes packs back to the same words, in place or field by field.
#![no_main]

use libfuzzer_sys::fuzz_target;
use wasmlet_policy_default::packed::{pack_pods, pods_as_words, pods_from_words, unpack_pods};

fuzz_target!(|bytes: &[u8]| {
    let words: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect();
    let fast = pods_from_words(&words);
    let slow = unpack_pods(&words);
    match (&fast, &slow) {
        (Ok(fast), Ok(slow)) => {
            assert_eq!(&fast[..], &slow[..]);
            let mut packed = Vec::new();
            pack_pods(slow, &mut packed);
            assert_eq!(packed, words);
            assert_eq!(&pods_as_words(slow)[..], &words[..]);
        }
        (Err(a), Err(b)) => assert_eq!(a, b),
        _ => panic!("the in-place and field-by-field readers disagree: {fast:?} {slow:?}"),
    }
    if let Err(error) = slow {
        assert!(error.starts_with("pod "), "{error}");
    }
});
