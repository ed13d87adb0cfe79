import { CodeBlock, CodeBlockCode } from '@patternfly/react-core';
import { stringify } from 'yaml';

// clean drops what a person does not write: managed fields.
export function clean<T extends { metadata?: Record<string, unknown> }>(obj: T): T {
  const copy = structuredClone(obj);
  if (copy.metadata) delete copy.metadata.managedFields;
  return copy;
}

export function toYAML(obj: unknown): string {
  return stringify(obj, { lineWidth: 0 });
}

export function YamlView({ obj }: { obj: unknown }) {
  return (
    <CodeBlock className="knm-yaml">
      <CodeBlockCode>{toYAML(obj)}</CodeBlockCode>
    </CodeBlock>
  );
}
