-- Drives `kgen lsp` from Neovim (0.7 and later), headless: opens a spec with
-- a typo, waits for the diagnostic, asks for hovers, a completion, a
-- definition and formatting, fixes the typo in the buffer and waits for the diagnostics
-- to clear. Everything seen goes to $KGEN_LSP_OUT as JSON; any error too.
local out = {}
local function main()
  local kgen, spec, root = os.getenv('KGEN_BIN'), os.getenv('KGEN_SPEC'), os.getenv('KGEN_ROOT')
  vim.cmd('edit ' .. vim.fn.fnameescape(spec))
  local buf = vim.api.nvim_get_current_buf()
  local config = { name = 'kgen', cmd = { kgen, 'lsp' }, root_dir = root }
  local id
  if vim.lsp.start then -- 0.8 and later, as the README's set-up
    id = vim.lsp.start(config)
  else
    id = vim.lsp.start_client(config)
    vim.lsp.buf_attach_client(buf, id)
  end
  assert(id, 'the client did not start')
  local client = vim.lsp.get_client_by_id(id)
  assert(vim.wait(20000, function() return #vim.diagnostic.get(buf) > 0 end, 50), 'no diagnostics within 20s')
  out.diagnostics = {}
  for _, d in ipairs(vim.diagnostic.get(buf)) do
    table.insert(out.diagnostics, { line = d.lnum, col = d.col, end_line = d.end_lnum, end_col = d.end_col, message = d.message })
  end
  -- Hover over the misspelled call's argument, a let (line 7, "inner").
  local function at(line, col)
    return { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = line, character = col } }
  end
  local r = client.request_sync('textDocument/hover', at(6, 28), 10000, buf)
  out.hover = r and r.result and r.result.contents.value or vim.inspect(r)
  r = client.request_sync('textDocument/hover', at(6, 13), 10000, buf)
  out.hover_input = r and r.result and r.result.contents.value or vim.inspect(r)
  r = client.request_sync('textDocument/completion', at(6, 19), 10000, buf)
  out.completion = {}
  for _, item in ipairs((r and r.result and r.result.items) or {}) do
    table.insert(out.completion, item.label)
  end
  r = client.request_sync('textDocument/definition', at(6, 28), 10000, buf)
  local loc = r and r.result and (r.result[1] or r.result)
  out.definition = loc and loc.range and { line = loc.range.start.line, col = loc.range.start.character } or vim.inspect(r)
  -- Fix the typo as a user would, in the buffer: the client sends didChange.
  local line = vim.api.nvim_buf_get_lines(buf, 6, 7, false)[1]
  vim.api.nvim_buf_set_lines(buf, 6, 7, false, { (line:gsub('tahn', 'tanh')) })
  out.cleared = vim.wait(20000, function() return #vim.diagnostic.get(buf) == 0 end, 50)
  if vim.lsp.buf.format then
    vim.lsp.buf.format({ timeout_ms = 10000, bufnr = buf })
  else
    vim.lsp.buf.formatting_sync(nil, 10000)
  end
  out.formatted = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
  client.stop()
end
local ok, err = pcall(main)
out.ok, out.err = ok, err and tostring(err) or nil
local f = assert(io.open(os.getenv('KGEN_LSP_OUT'), 'w'))
f:write(vim.fn.json_encode(out))
f:close()
vim.cmd('qa!')
