print("Welcome to the mine")
shell.run("mine")
