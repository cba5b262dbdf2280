{
  "targets": [
    {
      "target_name": "tftp_engine",
      "sources": ["native/tftp_engine.c"],
      "cflags": ["-O2", "-Wall", "-Wextra", "-Wno-unused-parameter"],
      "conditions": [["OS!='linux'", {"type": "none"}]]
    },
    {
      "target_name": "lldp_listen",
      "sources": ["native/lldp_listen.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"],
      "conditions": [["OS!='linux'", {"type": "none"}]]
    }
  ]
}
