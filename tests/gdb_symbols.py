"""ELF symbols as gdb finds them, for the gdb scripts of tests/t_stack.sh and
tests/t_python_stack.sh (run inside gdb: `import gdb` works only there)."""
import gdb


def symbol(pc):
    """The ELF symbol holding pc and its start address."""
    text = gdb.execute("info symbol %d" % pc, to_string=True)
    if " in section " not in text:
        return "??", None
    head = text.split(" in section ")[0]
    if " + " in head:
        name, off = head.rsplit(" + ", 1)
        return name.strip(), pc - int(off)
    return head.strip(), pc


def address(name):
    """The address gdb gives the symbol name, None when it knows none."""
    try:
        return int(gdb.parse_and_eval("(unsigned long)&'%s'" % name))
    except gdb.error:
        return None
