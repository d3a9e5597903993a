//! Reading `model.safetensors` on arbitrary bytes: always an error or
//! tensors, never a panic, an abort or a huge allocation. Tensors that load
//! hold as many values as their shapes say, and write and read back as the
//! same tensors.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo_nn::StateDict;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.safetensors");
    let Ok(dict) = StateDict::from_safetensors(data, path) else { return };
    for t in dict.tensors() {
        assert_eq!(t.shape.iter().product::<usize>(), t.data.len(), "{}", t.name);
    }
    let bytes = dict.to_safetensors().expect("loaded tensors write");
    let back = StateDict::from_safetensors(&bytes, path).expect("written tensors read");
    // Bits, not values: a NaN payload must survive too.
    let bits = |d: &StateDict| -> Vec<(String, Vec<usize>, Vec<u32>)> {
        d.tensors()
            .iter()
            .map(|t| (t.name.clone(), t.shape.clone(), t.data.iter().map(|x| x.to_bits()).collect()))
            .collect()
    };
    assert_eq!(bits(&back), bits(&dict));
});
