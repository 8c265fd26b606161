use tract_onnx::prelude::*;
fn main() -> TractResult<()> {
    let path = std::env::args().nth(1).unwrap();
    let model = tract_onnx::onnx().model_for_path(&path)?;
    let typed = model.into_typed()?;
    println!("=== typed");
    for n in typed.eval_order()? {
        let n = &typed.nodes[n];
        println!(
            "{} {:?} {} {:?} -> {:?}",
            n.id,
            n.name,
            n.op.name(),
            n.inputs,
            n.outputs.iter().map(|o| format!("{:?}", o.fact)).collect::<Vec<_>>()
        );
    }
    let dec = typed.into_decluttered()?;
    println!("=== decluttered");
    for n in dec.eval_order()? {
        let n = &dec.nodes[n];
        println!(
            "{} {:?} {} {:?} {:?} -> {:?}",
            n.id,
            n.name,
            n.op.name(),
            n.inputs,
            n.op,
            n.outputs.iter().map(|o| format!("{:?}", o.fact.shape)).collect::<Vec<_>>()
        );
    }
    Ok(())
}
