"""A fabric over several servers (docs/distributed.md): cut links over VXLAN and stand-in
servers (``overlay``), ssh to the servers (``ssh``), real servers and their checks
(``servers``), nodes, agents and host processes on a server (``remote``)."""
