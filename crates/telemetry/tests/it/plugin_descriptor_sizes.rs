//! The plug-in ABI's one sized struct, the descriptor a plug-in's init
//! function returns: every `struct_size` from 0 to its size + 8 is refused
//! with a message naming the size found and the one accepted, except the
//! exact size of version 1 (no size that ends inside a field, or past the
//! struct, is ever read). The host's parameters struct has no size field:
//! its layout is fixed by the API version.

use nixl_telemetry::exporter::plugin::fuzzing::{check_descriptor, DescriptorShape};
use nixl_telemetry_abi::c_abi::PluginDescriptor;

#[test]
fn only_the_exact_descriptor_size_is_accepted() {
    let size = std::mem::size_of::<PluginDescriptor>();
    for struct_size in 0..=size as u32 + 8 {
        let shape = DescriptorShape {
            api_version: 1,
            struct_size,
            functions: 0b1_1111,
            name: Some(b"sizes".to_vec()),
            version: Some(b"1.0".to_vec()),
            misaligned: false,
            null: false,
        };
        let result = check_descriptor(&shape);
        if struct_size as usize == size {
            assert_eq!(result.unwrap(), ("sizes".to_owned(), "1.0".to_owned()));
        } else {
            let message = result
                .expect_err("a size other than version 1's")
                .to_string();
            assert!(
                message.contains(&struct_size.to_string()) && message.contains(&size.to_string()),
                "struct_size {struct_size}: {message}"
            );
        }
    }
}
