//! A budget exactly equal to the planned arena compiles (one byte less fails: see
//! fail/one_byte_short.rs). chain.onnx plans to 1920 bytes.
sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        sram: 1920,
    }
}

const _: () = assert!(m::ARENA_BYTES == 1920);

fn main() {}
