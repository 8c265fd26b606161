//! `models!`: two models that never run at the same time in one arena sized to the larger, behind
//! one busy flag. Both members match onnxruntime (fixtures) and tract.

mod common;

sramfit::models! {
    /// Listen, then look.
    pub mod sensing {
        /// Keyword spotting.
        pub mod kws { path: "tests/models/kws_dscnn.onnx", sram: 64_000 }
        /// Visual wake words.
        pub mod vww { path: "tests/models/vww_mobilenetv1.onnx", optimize: { tile: true } }
    }
}

// The same models alone, for their arena sizes.
sramfit::model! { pub mod kws_alone { path: "tests/models/kws_dscnn.onnx" } }
sramfit::model! { pub mod vww_alone { path: "tests/models/vww_mobilenetv1.onnx", optimize: { tile: true } } }

// In arenas of their own (of the group's type): the shared one is `one_busy_flag_for_the_group`'s,
// and tests run in parallel.
fn kws_run(inputs: &[&[f32]], outputs: &mut [&mut [f32]]) -> Result<(), sramfit::Error> {
    sensing::kws::run_dyn_in(&mut Box::new(sensing::Arena::new()), inputs, outputs)
}

fn vww_run(inputs: &[&[f32]], outputs: &mut [&mut [f32]]) -> Result<(), sramfit::Error> {
    sensing::vww::run_dyn_in(&mut Box::new(sensing::Arena::new()), inputs, outputs)
}

#[test]
fn kws_matches_onnxruntime_and_tract() {
    common::check_model("tests/models/kws_dscnn.onnx", sensing::kws::OUTPUT_SHAPES, kws_run);
}

#[test]
fn vww_matches_onnxruntime_and_tract() {
    common::check_model("tests/models/vww_mobilenetv1.onnx", sensing::vww::OUTPUT_SHAPES, vww_run);
}

#[test]
fn one_arena_of_the_larger_size() {
    // Each member keeps its own plan; the group's arena is the larger of the two, not their sum.
    assert_eq!(
        (sensing::kws::ARENA_BYTES, sensing::vww::ARENA_BYTES),
        (kws_alone::ARENA_BYTES, vww_alone::ARENA_BYTES)
    );
    // VWW with patch-based execution (a Cortex-M build's default, asked for here): 221,184 B untiled.
    assert_eq!((kws_alone::ARENA_BYTES, vww_alone::ARENA_BYTES), (64_000, 73_728));
    assert_eq!(sensing::ARENA_BYTES, 73_728);
    assert_eq!(core::mem::size_of::<sensing::Arena>(), sensing::ARENA_BYTES);
    assert_eq!(core::mem::size_of::<sensing::kws::Arena>(), sensing::ARENA_BYTES, "the member's Arena is the group's");
}

#[test]
fn one_busy_flag_for_the_group() {
    let held = sensing::shared().unwrap();
    let (x, mut y) = (common::random(49 * 10, 3), [0.0f32; 12]);
    assert_eq!(sensing::kws::run(x.as_slice().try_into().unwrap(), &mut y), Err(sramfit::Error::Busy));
    let image = common::random(3 * 96 * 96, 4);
    let mut person = [0.0f32; 2];
    assert_eq!(sensing::vww::run(image.as_slice().try_into().unwrap(), &mut person), Err(sramfit::Error::Busy));
    drop(held);
    sensing::kws::run(x.as_slice().try_into().unwrap(), &mut y).unwrap();
    sensing::vww::run(image.as_slice().try_into().unwrap(), &mut person).unwrap();
    // The same bits as each model alone: sharing the arena changes no offset and no kernel.
    let (mut y_alone, mut person_alone) = ([0.0f32; 12], [0.0f32; 2]);
    kws_alone::run(x.as_slice().try_into().unwrap(), &mut y_alone).unwrap();
    vww_alone::run(image.as_slice().try_into().unwrap(), &mut person_alone).unwrap();
    assert_eq!(
        (y.map(f32::to_bits), person.map(f32::to_bits)),
        (y_alone.map(f32::to_bits), person_alone.map(f32::to_bits))
    );
}
