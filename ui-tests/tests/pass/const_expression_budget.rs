//! A budget the macro cannot evaluate (a board crate's constant) is checked by a const assertion.
const BOARD_SRAM: usize = 64 * 1024;
const STACK_RESERVE: usize = 8 * 1024;

sramfit::model! {
    /// Tiny model on a board with 64 KiB of SRAM, 8 KiB kept for the stack.
    pub mod m {
        path: "models/tiny.onnx",
        sram: BOARD_SRAM - STACK_RESERVE,
        flash: 2 KiB,
    }
}

fn main() {
    let input = [0.5f32; 4 * 16 * 16];
    let mut output = [0.0f32; 8 * 16 * 16];
    m::run(&input, &mut output).unwrap();
}
