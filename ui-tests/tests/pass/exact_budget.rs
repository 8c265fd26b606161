//! A budget exactly equal to the planned arena compiles (one byte less fails: see
//! fail/one_byte_short.rs). tiny.onnx plans to 17408 bytes.
sramfit::model! {
    mod m {
        path: "models/tiny.onnx",
        sram: 17408,
    }
}

const _: () = assert!(m::ARENA_BYTES == 17408);

fn main() {}
