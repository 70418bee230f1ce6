//! OWNER: codegen helper.
