//! A bounded dimension: the arena is planned (and checked against `sram`) at the largest length,
//! and `run_dyn` takes the length first.
sramfit::model! {
    pub mod m {
        path: "models/symbolic.onnx",
        sram: 64 KiB,
        inputs: { "input": ["batch <= 3", 4, 16, 16] },
    }
}

const _: () = assert!(m::MAX_LEN == 3 && m::MIN_LEN == 1);
const _: () = assert!(m::input_lens(2)[0] == 2 * 4 * 16 * 16);

fn main() {
    let input = [0.5f32; 2 * 4 * 16 * 16];
    let mut output = vec![0.0f32; m::output_lens(2)[0]];
    m::run_dyn(2, &[&input], &mut [&mut output]).unwrap();
    assert_eq!(m::run_dyn(4, &[&input], &mut [&mut output]), Err(sramfit::Error::Shape { port: sramfit::Port::Length, expected: 3, found: 4 }));
}
