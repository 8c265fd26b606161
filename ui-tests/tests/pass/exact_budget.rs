//! A budget exactly equal to the planned arena compiles (one byte less fails: see
//! fail/one_byte_short.rs). chain.onnx plans to 2048 bytes.
sramfit::model! {
    mod m {
        path: "models/chain.onnx",
        sram: 2048,
    }
}

const _: () = assert!(m::ARENA_BYTES == 2048);

fn main() {}
