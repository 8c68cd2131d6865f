//! The importers of users' models, each producing an aten program ([`ckpt_aten::program`])
//! for the ONNX lowering: [`pt2`] reads torch.export archives, [`script`] TorchScript code
//! (tokenizer, parser, inliner, conversion sized by the aten layer's shapes), and
//! [`torchvision`] plain state dicts of torchvision's families (the architecture
//! recognised from the keys, the program torch.export records for it written out).

#![warn(missing_docs)]

pub mod pt2;
pub mod script;
pub mod torchvision;
