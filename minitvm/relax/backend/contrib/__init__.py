"""External backends offloaded through FuseOpsByPattern / RunCodegen (TVM's
`relax.backend.contrib`); each registers its patterns and code generator when imported."""
