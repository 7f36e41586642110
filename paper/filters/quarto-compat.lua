--[[
The subset of Quarto that this manuscript uses, for plain pandoc (3.x) when Quarto is not installed.
Run it BEFORE --citeproc (pandoc applies filters in command-line order):

  pandoc index.qmd --lua-filter filters/quarto-compat.lua --citeproc ...

It provides
  * {{< include path >}}   a paragraph that is only this shortcode is replaced by the file's blocks
  * {{< meta key.sub >}}   replaced by the metadata value (from --metadata-file); an unknown key is an error
  * [text]{.model-text}    text a model wrote: left as written (no shortcodes, no cross-references inside)
  * @fig-x, @tbl-x, @sec-x cross-references: figures and tables are numbered in document order and their
                           captions prefixed ("Figure 2: ..."); sections are numbered like --number-sections;
                           a reference to a missing label is an error
  * ::: {.callout-note}    (and -tip, -warning, -important, -caution) a titled, classed box
  * Quarto's author schema (author: [{name:, affiliations: [...]}]) flattened to names for pandoc's templates
Errors name the offending shortcode or label and stop the render, so an unresolved reference cannot reach
a reader.
]]

local stringify = pandoc.utils.stringify
local meta = {}
local KINDS = { fig = "Figure", tbl = "Table", sec = "Section" }
local labels = {}   -- id -> "Figure 3"

local function fail(msg)
  error("quarto-compat: " .. msg, 0)
end

local function lookup(key)
  local node = meta
  for part in key:gmatch("[^%.]+") do
    if type(node) ~= "table" or node[part] == nil then
      fail("{{< meta " .. key .. " >}}: no such metadata key (is the report's numbers file up to date?)")
    end
    node = node[part]
  end
  return stringify(node)
end

-- ------------------------------------------------------------------------------------------ pass 1: includes
local function include(para)
  local text = stringify(para)
  local path = text:match("^{{<%s*include%s+(%S+)%s*>}}$")
  if not path then return nil end
  local fh = io.open(path, "r")
  if not fh then fail("{{< include " .. path .. " >}}: file not found (run the report stage)") end
  local content = fh:read("a")
  fh:close()
  return pandoc.read(content, "markdown").blocks
end

-- ------------------------------------------------------------------------------------------ pass 2: shortcodes
local function shortcodes(inlines)
  local out = pandoc.Inlines({})
  local i = 1
  while i <= #inlines do
    local el = inlines[i]
    if el.t == "Str" and el.text:find("{{<", 1, true) then
      -- gather the shortcode's text up to the Str holding ">}}"
      local buf, j = {}, i
      while j <= #inlines do
        local e = inlines[j]
        buf[#buf + 1] = (e.t == "Space" or e.t == "SoftBreak") and " " or stringify(e)
        if e.t == "Str" and e.text:find(">}}", 1, true) then break end
        j = j + 1
      end
      local text = table.concat(buf)
      local before, body, after = text:match("^(.-){{<%s*(.-)%s*>}}(.*)$")
      if not body then fail("unterminated shortcode: " .. text) end
      local name, arg = body:match("^(%S+)%s*(.-)$")
      if name ~= "meta" then fail("unsupported shortcode {{< " .. body .. " >}}") end
      if before ~= "" then out:insert(pandoc.Str(before)) end
      out:insert(pandoc.Str(lookup(arg)))
      if after ~= "" then out:insert(pandoc.Str(after)) end
      i = j + 1
    else
      out:insert(el)
      i = i + 1
    end
  end
  return out
end

-- ------------------------------------------------------------------------------------------ pass 3: numbering
local counters = { fig = 0, tbl = 0 }
local section = {}

local function kind_of(id)
  local k = id and id:match("^(%a+)%-")
  return KINDS[k] and k or nil
end

local function prefix_caption(el, kind, n)
  local label = KINDS[kind] .. " " .. n
  labels[el.identifier] = label
  if FORMAT == "typst" then return el end -- typst numbers its figures and tables itself
  local cap = el.caption
  if cap and cap.long and #cap.long > 0 then
    local first = cap.long[1]
    if first.content then
      first.content:insert(1, pandoc.Space())
      first.content:insert(1, pandoc.Strong({ pandoc.Str(label .. ":") }))
    end
  else
    cap.long = { pandoc.Plain({ pandoc.Strong({ pandoc.Str(label) }) }) }
  end
  el.caption = cap
  return el
end

local function number(blocks)
  return blocks:walk({
    Header = function(h)
      if h.classes:includes("unnumbered") then return nil end
      section[h.level] = (section[h.level] or 0) + 1
      for l = h.level + 1, 6 do section[l] = nil end
      local parts = {}
      for l = 1, h.level do parts[#parts + 1] = tostring(section[l] or 0) end
      if h.identifier ~= "" then labels[h.identifier] = "Section " .. table.concat(parts, ".") end
      return nil
    end,
    Figure = function(f)
      if kind_of(f.identifier) ~= "fig" then return nil end
      counters.fig = counters.fig + 1
      return prefix_caption(f, "fig", counters.fig)
    end,
    Table = function(t)
      if kind_of(t.identifier) ~= "tbl" then return nil end
      counters.tbl = counters.tbl + 1
      return prefix_caption(t, "tbl", counters.tbl)
    end,
  })
end

local function crossref(cite)
  local ids = {}
  for _, c in ipairs(cite.citations) do
    if not kind_of(c.id) then return nil end -- a bibliography citation: leave it to citeproc
    ids[#ids + 1] = c.id
  end
  local out = pandoc.Inlines({})
  for n, id in ipairs(ids) do
    local label = labels[id]
    if not label then fail("cross-reference @" .. id .. " points to no figure, table or section") end
    if n > 1 then out:insert(pandoc.Str(n == #ids and " and " or ", ")) end
    out:insert(pandoc.Link(label, "#" .. id))
  end
  return out
end

-- ------------------------------------------------------------------------------------------ callouts, authors
local CALLOUT_TITLES = { note = "Note", tip = "Tip", warning = "Warning", important = "Important", caution = "Caution" }

local function callout(div)
  for _, class in ipairs(div.classes) do
    local kind = class:match("^callout%-(%a+)$")
    if kind and CALLOUT_TITLES[kind] then
      local title = div.attributes["title"] or CALLOUT_TITLES[kind]
      div.attributes["title"] = nil
      local body = pandoc.Blocks({ pandoc.Div(pandoc.Para({ pandoc.Strong({ pandoc.Str(title) }) }),
        pandoc.Attr("", { "callout-title" })) })
      body:extend(div.content)
      return pandoc.Div(body, pandoc.Attr(div.identifier, { "callout", "callout-" .. kind }))
    end
  end
  return nil
end

local function authors(m)
  if m.author and pandoc.utils.type(m.author) == "List" then
    local names = pandoc.List({})
    for _, a in ipairs(m.author) do
      if pandoc.utils.type(a) == "table" and a.name then
        local s = stringify(a.name)
        if a.affiliations then
          local affs = {}
          for _, af in ipairs(a.affiliations) do
            affs[#affs + 1] = stringify(af.name or af)
          end
          if #affs > 0 then s = s .. " (" .. table.concat(affs, "; ") .. ")" end
        end
        names:insert(pandoc.MetaInlines({ pandoc.Str(s) }))
      else
        names:insert(a)
      end
    end
    m.author = names
  end
  return m
end

-- ------------------------------------------------------------------------------------------ model text
-- Text a model wrote is quoted verbatim in a [...]{.model-text} span (report.formatting.model_text). Its
-- content is set aside while shortcodes and cross-references are resolved, so a reply that reads like one
-- ("{{< meta x >}}", "@fig-x") is printed as written, and put back at the end.
local held = {}

local function hold(span)
  if span.classes:includes("model-text") then
    held[#held + 1] = span.content
    span.content = pandoc.Inlines({ pandoc.Str("model-text-" .. #held) })
    return span
  end
end

local function release(span)
  if span.classes:includes("model-text") then
    span.content = held[tonumber(pandoc.utils.stringify(span.content):match("^model%-text%-(%d+)$"))]
    return span
  end
end

function Pandoc(doc)
  meta = doc.meta
  doc.blocks = doc.blocks:walk({ Para = include })
  doc.blocks = doc.blocks:walk({ Span = hold })
  doc.blocks = doc.blocks:walk({ Inlines = shortcodes })
  for k, v in pairs(doc.meta) do -- shortcodes in metadata (title, abstract) too
    if pandoc.utils.type(v) == "Inlines" then
      doc.meta[k] = shortcodes(v)
    elseif pandoc.utils.type(v) == "Blocks" then
      doc.meta[k] = v:walk({ Inlines = shortcodes })
    end
  end
  doc.blocks = number(doc.blocks)
  doc.blocks = doc.blocks:walk({ Cite = crossref, Div = callout })
  doc.blocks = doc.blocks:walk({ Span = release })
  doc.meta = authors(doc.meta)
  return doc
end
