//! Compiles gnostic's `openapi.v2` protocol (`openapi/OpenAPIv2.proto`, the message
//! `/openapi/v2` answers in protobuf) to a descriptor set the server reads at run time.

fn main() {
    let proto = "openapi/OpenAPIv2.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["openapi"]).expect("compiling openapi/OpenAPIv2.proto");
    let out = std::path::PathBuf::from(std::env::var_os("OUT_DIR").expect("OUT_DIR"));
    let bytes = prost::Message::encode_to_vec(&descriptors);
    std::fs::write(out.join("openapiv2.bin"), bytes).expect("writing the descriptor set");
}
