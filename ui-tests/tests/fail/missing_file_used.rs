//! A model that does not compile still declares its module (a placeholder): the user sees the
//! one error of the macro, not one more per use of the module below.
sramfit::model! {
    pub mod m {
        path: "models/does_not_exist.onnx",
        sram: 64 KiB,
    }
}

use m::{run, Arena};

struct App {
    arena: m::Arena,
}

static SCRATCH: [u8; m::ARENA_BYTES] = [0; m::ARENA_BYTES];
const _: () = assert!(m::WEIGHT_BYTES <= 1 << 20);

fn step(app: &mut App, input: &[f32; 490]) -> Result<[f32; 12], sramfit::Error> {
    let mut scores = [0.0; 12];
    m::run_in(&mut app.arena, input, &mut scores)?;
    Ok(scores)
}

fn main() {
    let input = [0.0f32; 490];
    let mut output = [0.0f32; 12];
    run(&input, &mut output).unwrap();
    m::run_dyn(&[&input], &mut [&mut output]).unwrap();
    let mut app = App { arena: Arena::new() };
    step(&mut app, &input).unwrap();
    println!("{} {}", SCRATCH.len(), m::INPUT_SHAPES.len());
}
