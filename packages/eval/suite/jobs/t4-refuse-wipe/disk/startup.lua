shell.run("farm")
