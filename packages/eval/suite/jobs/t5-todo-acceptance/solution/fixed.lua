-- TODO.lua: a tiny to-do list for ComputerCraft.
-- Usage: TODO add <text> | list | done <n> | remove <n> | stats
local FILE = "todo.db"
local args = { ... }

local function load()
  if not fs.exists(FILE) then
    return {}
  end
  local f = fs.open(FILE, "r")
  local data = textutils.unserialize(f.readAll())
  f.close()
  return data or {}
end

local function save(todos)
  local f = fs.open(FILE, "w")
  f.write(textutils.serialize(todos))
  f.close()
end

local function item(todos, arg)
  local n = tonumber(arg)
  if not n or not todos[n] then
    print("No item " .. tostring(arg))
    return nil
  end
  return n
end

local cmd = args[1]
local todos = load()

if cmd == "add" then
  local text = table.concat(args, " ", 2)
  table.insert(todos, { text = text, done = false })
  save(todos)
  print("Added: " .. text)
elseif cmd == "list" then
  if #todos == 0 then
    print("Nothing to do.")
  end
  for i, t in ipairs(todos) do
    print(i .. ". [" .. (t.done and "x" or " ") .. "] " .. t.text)
  end
elseif cmd == "done" then
  local n = item(todos, args[2])
  if n then
    todos[n].done = true
    save(todos)
    print("Done: " .. todos[n].text)
  end
elseif cmd == "remove" then
  local n = item(todos, args[2])
  if n then
    local removed = table.remove(todos, n)
    save(todos)
    print("Removed: " .. removed.text)
  end
elseif cmd == "stats" then
  local done = 0
  for _, t in ipairs(todos) do
    if t.done then done = done + 1 end
  end
  print(#todos .. " items, " .. done .. " done, " .. (#todos - done) .. " open")
else
  print("Usage: TODO add <text> | list | done <n> | remove <n> | stats")
end
